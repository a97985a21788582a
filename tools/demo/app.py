"""A small CPU-bound program for `make demo`: a made-up order pipeline whose time
splits between parsing, pricing and a recursive tax-rule walk."""
import json
import sys
import time


def parse_orders(n):
    raw = json.dumps([{"id": i, "qty": i % 7 + 1, "sku": f"SKU-{i % 97}"} for i in range(n)])
    return json.loads(raw)


def price(order):
    total = 0.0
    for k in range(order["qty"] * 40):
        total += (k * 1.0001) ** 0.5
    return total


def tax_rules(depth, amount):
    if depth == 0:
        return amount * 1.2
    return tax_rules(depth - 1, amount) + 0.0


def run(seconds):
    deadline = time.monotonic() + seconds
    batches = 0
    while time.monotonic() < deadline:
        orders = parse_orders(500)
        subtotal = sum(price(o) for o in orders)
        tax_rules(30, subtotal)
        batches += 1
    return batches


if __name__ == "__main__":
    print(f"demo app: processed {run(float(sys.argv[1]) if len(sys.argv) > 1 else 5)} batches")
