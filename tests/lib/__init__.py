# SPDX-License-Identifier: GPL-2.0-only
"""What the tests share: paths, collapsed-stack parsing, interpreters, the harness, and
per subject the helpers more than one test file uses (agent, cgroups, dump, ingest,
procfs, system_wide, writers). A test file imports from here, never from another test
file."""
