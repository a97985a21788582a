# SPDX-License-Identifier: GPL-2.0-only
"""What the tests share: paths, collapsed-stack parsing, interpreters, the harness."""
