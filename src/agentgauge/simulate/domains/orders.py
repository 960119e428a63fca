"""The bundled domain: an order-management desk (customers, orders, cancellations, returns,
exchanges, address changes) with its policy, for demos, the docs and the tests.

``OrderDesk`` is the environment (``--env agentgauge.simulate.domains.orders:OrderDesk``);
``orders_scenarios.jsonl`` beside this module holds its graded scenarios (``--domain orders``
selects both). The state is JSON: ``customers``, ``products`` (with stock), ``orders`` (status,
dates, items, payment, address, refunds), ``returns`` and ``transfers``; ``today`` fixes the
date, so that every conversation sees the same one. Ids a tool creates (``R1``, ``R2``...)
follow from the state, never from chance.

The tools enforce the hard rules of the policy: an order is changed only for the customer who
was identified, cancelled or re-addressed only while processing, returned or exchanged only
within 30 days of delivery. A refused call raises an error (the agent sees it) and is reported
as a policy violation; the state is left as it was.
"""

from __future__ import annotations

import copy
from datetime import date
from pathlib import Path
from typing import Any, Literal

from agentgauge.model import JSON

__all__ = ["POLICY", "SCENARIOS", "OrderDesk", "default_state"]

SCENARIOS = Path(__file__).with_name("orders_scenarios.jsonl")
"""The domain's scenario file."""

RETURN_WINDOW_DAYS = 30

POLICY = """\
# Order desk policy

You help customers of an online shop with their orders. Today is the date in the state \
(2026-11-01).

## Identity
- Before you look at or change anything of a customer, identify them with `find_customer`: by \
their email address, or by their full name and zip code. Never act for a customer you have not \
identified, and never act on an order that belongs to another customer.

## Cancelling
- Only orders with status "processing" can be cancelled.
- The reason must be "no longer needed" or "ordered by mistake"; ask for it if it is not given.
- The whole amount is refunded to the order's payment method. Tell the customer the amount.

## Returns
- Items of a "delivered" order can be returned within 30 days of delivery.
- The refund goes to the original payment method or, if the customer prefers, to a gift card; \
ask which if they have not said. Tell the customer the amount.

## Exchanges
- An item of a "delivered" order can be exchanged, within 30 days of delivery, for another \
variant of the same product (for example another colour) that is in stock. The price is the same.

## Shipping address
- The address can be changed only while the order is "processing".

## Before any change
- List what you will do (order, items, amount, refund method) and get the customer's explicit \
"yes" before calling the tool.

## Anything else
- Price matching, discounts, complaints and account changes are out of scope: transfer the \
customer to a human agent with `transfer_to_human`, or tell them you cannot help if they decline.
"""


def _item(sku: str, name: str, price: float, quantity: int = 1) -> dict[str, JSON]:
    return {"sku": sku, "name": name, "price": price, "quantity": quantity, "status": "ordered"}


_PRODUCTS: dict[str, tuple[str, float, int]] = {
    "P-LAMP-BLK": ("Desk lamp (black)", 39.0, 5),
    "P-LAMP-WHT": ("Desk lamp (white)", 39.0, 0),
    "P-MUG-BLU": ("Mug (blue)", 12.5, 20),
    "P-MUG-RED": ("Mug (red)", 12.5, 3),
    "P-KBD-US": ("Keyboard (US)", 89.0, 4),
    "P-KBD-UK": ("Keyboard (UK)", 89.0, 2),
    "P-CHAIR": ("Office chair", 249.0, 1),
    "P-HEADSET": ("Headset", 59.9, 7),
    "P-BOTTLE": ("Water bottle", 18.0, 10),
    "P-NOTEBOOK": ("Notebook", 6.5, 50),
}


def _line(sku: str, quantity: int = 1) -> JSON:
    name, price, _stock = _PRODUCTS[sku]
    return _item(sku, name, price, quantity)


def _address(street: str, city: str, state: str, zip_code: str) -> dict[str, JSON]:
    return {"street": street, "city": city, "state": state, "zip_code": zip_code}


_CUSTOMERS: dict[str, tuple[str, str, dict[str, JSON]]] = {
    "C101": (
        "Ada Lovelace",
        "ada.lovelace@example.com",
        _address("12 Analytical Street", "New York", "NY", "10001"),
    ),
    "C102": (
        "Grace Hopper",
        "grace.hopper@example.com",
        _address("7 Compiler Road", "Arlington", "VA", "22201"),
    ),
    "C103": (
        "Alan Turing",
        "alan.turing@example.com",
        _address("1 Enigma Way", "San Francisco", "CA", "94107"),
    ),
    "C104": (
        "Katherine Johnson",
        "k.johnson@example.com",
        _address("3 Orbit Lane", "Hampton", "VA", "23666"),
    ),
    "C105": (
        "Edsger Dijkstra",
        "edsger@example.com",
        _address("5 Shortest Path", "Austin", "TX", "78701"),
    ),
    "C106": (
        "Barbara Liskov",
        "b.liskov@example.com",
        _address("9 Substitution Court", "Cambridge", "MA", "02139"),
    ),
}

# order id -> customer, status, placed, delivered, items, payment
_ORDERS: dict[str, tuple[str, str, str, str | None, list[JSON], str]] = {
    "W1001": (
        "C101",
        "delivered",
        "2026-10-15",
        "2026-10-20",
        [_line("P-LAMP-BLK"), _line("P-MUG-BLU", 2)],
        "card",
    ),
    "W1002": ("C101", "processing", "2026-10-30", None, [_line("P-KBD-US")], "card"),
    "W1003": ("C102", "processing", "2026-10-31", None, [_line("P-HEADSET")], "gift_card"),
    "W1004": ("C102", "delivered", "2026-09-10", "2026-09-15", [_line("P-CHAIR")], "card"),
    "W1005": (
        "C103",
        "shipped",
        "2026-10-27",
        None,
        [_line("P-BOTTLE"), _line("P-NOTEBOOK", 3)],
        "paypal",
    ),
    "W1006": (
        "C103",
        "delivered",
        "2026-10-20",
        "2026-10-25",
        [_line("P-KBD-UK"), _line("P-MUG-RED")],
        "card",
    ),
    "W1007": (
        "C104",
        "delivered",
        "2026-10-05",
        "2026-10-10",
        [_line("P-HEADSET"), _line("P-BOTTLE")],
        "card",
    ),
    "W1008": ("C104", "cancelled", "2026-10-01", None, [_line("P-LAMP-WHT")], "card"),
    "W1009": (
        "C105",
        "processing",
        "2026-10-31",
        None,
        [_line("P-CHAIR"), _line("P-LAMP-BLK")],
        "card",
    ),
    "W1010": (
        "C106",
        "delivered",
        "2026-10-26",
        "2026-10-31",
        [_line("P-NOTEBOOK", 5), _line("P-MUG-BLU")],
        "paypal",
    ),
    "W1011": ("C105", "delivered", "2026-10-01", "2026-10-05", [_line("P-HEADSET")], "card"),
    "W1012": ("C106", "processing", "2026-10-31", None, [_line("P-BOTTLE", 2)], "card"),
}


def default_state() -> dict[str, JSON]:
    """The desk's initial state (a fresh copy)."""
    customers: dict[str, JSON] = {
        cid: {
            "name": name,
            "email": email,
            "address": address,
            "gift_card_balance": 0.0,
        }
        for cid, (name, email, address) in _CUSTOMERS.items()
    }
    orders: dict[str, JSON] = {}
    for oid, (cid, status, placed, delivered, items, payment) in _ORDERS.items():
        order: dict[str, JSON] = {
            "customer": cid,
            "status": status,
            "placed": placed,
            "items": list(copy.deepcopy(items)),
            "payment": payment,
            "address": copy.deepcopy(_CUSTOMERS[cid][2]),
            "refunds": [],
        }
        if delivered is not None:
            order["delivered"] = delivered
        orders[oid] = order
    products: dict[str, JSON] = {
        sku: {"name": name, "price": price, "stock": stock}
        for sku, (name, price, stock) in _PRODUCTS.items()
    }
    return {
        "today": "2026-11-01",
        "customers": customers,
        "products": products,
        "orders": orders,
        "returns": {},
        "transfers": [],
    }


class PolicyError(Exception):
    """A call the policy forbids (the environment refuses it and reports a violation)."""


def _money(value: float) -> float:
    return round(value + 1e-9, 2)


def _family(sku: str) -> str:
    """``P-LAMP-BLK`` -> ``P-LAMP``: the product whose variants may be exchanged."""
    parts = sku.split("-")
    return "-".join(parts[:2])


class OrderDesk:
    """The order desk's environment (see the module docstring)."""

    policy = POLICY

    def __init__(self) -> None:
        self.db: dict[str, Any] = default_state()
        self._customer: str | None = None
        self._violations: list[dict[str, str]] = []

    # the environment protocol --------------------------------------------------------------

    def reset(self, state: JSON | None) -> None:
        """Start from ``state`` (the default state when None)."""
        self.db = copy.deepcopy(state) if isinstance(state, dict) else default_state()
        self._customer = None
        self._violations = []

    def state(self) -> JSON:
        """The current state (a copy)."""
        return copy.deepcopy(self.db)

    def violations(self) -> list[dict[str, str]]:
        """The policy breaches noticed so far (refused calls)."""
        return list(self._violations)

    def tools(self) -> list[Any]:
        """The desk's tools."""
        return [
            self.find_customer,
            self.get_customer,
            self.get_order,
            self.get_product,
            self.cancel_order,
            self.return_items,
            self.exchange_item,
            self.change_address,
            self.transfer_to_human,
        ]

    # helpers -------------------------------------------------------------------------------

    def _refuse(self, tool: str, message: str) -> PolicyError:
        self._violations.append({"message": message, "tool": tool})
        return PolicyError(message)

    def _own_order(
        self, tool: str, order_id: str, *, write: bool = True
    ) -> tuple[str, dict[str, Any]]:
        """The identified customer's order; a write for no one or for another customer is a
        violation (a read is only refused)."""
        oid = order_id.strip().upper()
        if self._customer is None:
            message = f"{tool} on {oid} before the customer was identified"
            raise self._refuse(tool, message) if write else PolicyError(message)
        order = self.db["orders"].get(oid)
        if order is None:
            raise KeyError(f"no order {order_id!r}")
        if order["customer"] != self._customer:
            if write:
                raise self._refuse(tool, f"{tool} on {oid}, an order of another customer")
            raise KeyError(f"order {oid} is not on this customer's account")
        return oid, order

    def _days_since_delivery(self, order: dict[str, Any]) -> int | None:
        if order.get("status") != "delivered" or "delivered" not in order:
            return None
        today = date.fromisoformat(self.db["today"])
        return (today - date.fromisoformat(order["delivered"])).days

    def _returnable(self, tool: str, oid: str, order: dict[str, Any]) -> None:
        days = self._days_since_delivery(order)
        if days is None:
            raise self._refuse(tool, f"{tool} on {oid}, which is {order['status']}, not delivered")
        if days > RETURN_WINDOW_DAYS:
            raise self._refuse(
                tool, f"{tool} on {oid}, delivered {days} days ago (more than 30 days)"
            )

    # tools ---------------------------------------------------------------------------------

    def find_customer(
        self, email: str | None = None, name: str | None = None, zip_code: str | None = None
    ) -> dict[str, str]:
        """Identify the customer by email address, or by full name and zip code.

        Returns the customer's id and name; the customer is then the one served.
        """
        for cid, customer in self.db["customers"].items():
            if email is not None and customer["email"].lower() == email.strip().lower():
                self._customer = cid
                return {"customer_id": cid, "name": customer["name"]}
            if (
                email is None
                and name is not None
                and zip_code is not None
                and customer["name"].lower() == name.strip().lower()
                and customer["address"]["zip_code"] == zip_code.strip()
            ):
                self._customer = cid
                return {"customer_id": cid, "name": customer["name"]}
        raise LookupError("no customer matches these details")

    def get_customer(self, customer_id: str) -> dict[str, Any]:
        """The customer's details and the ids and statuses of their orders."""
        if customer_id != self._customer:
            raise self._refuse("get_customer", "get_customer before identifying that customer")
        customer = self.db["customers"].get(customer_id)
        if customer is None:
            raise KeyError(f"no customer {customer_id!r}")
        orders = {
            oid: order["status"]
            for oid, order in self.db["orders"].items()
            if order["customer"] == customer_id
        }
        return {**copy.deepcopy(customer), "orders": orders}

    def get_order(self, order_id: str) -> dict[str, Any]:
        """An order of the identified customer: status, dates, items, payment, address."""
        oid, order = self._own_order("get_order", order_id, write=False)
        days = self._days_since_delivery(order)
        details = {"order_id": oid, **copy.deepcopy(order)}
        if days is not None:
            details["days_since_delivery"] = days
        return details

    def get_product(self, sku: str) -> dict[str, Any]:
        """A product's name, price and stock, with the other variants of the same product."""
        product = self.db["products"].get(sku)
        if product is None:
            raise KeyError(f"no product {sku!r}")
        variants = {
            other: {"name": p["name"], "stock": p["stock"]}
            for other, p in self.db["products"].items()
            if _family(other) == _family(sku) and other != sku
        }
        return {"sku": sku, **copy.deepcopy(product), "variants": variants}

    def cancel_order(
        self, order_id: str, reason: Literal["no longer needed", "ordered by mistake"]
    ) -> dict[str, Any]:
        """Cancel a processing order; the whole amount is refunded to its payment method."""
        oid, order = self._own_order("cancel_order", order_id)
        if order["status"] != "processing":
            raise self._refuse("cancel_order", f"cancel_order on {oid}, which is {order['status']}")
        amount = _money(sum(i["price"] * i["quantity"] for i in order["items"]))
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["refunds"].append({"amount": amount, "method": order["payment"]})
        return {"order_id": oid, "status": "cancelled", "refund": amount}

    def return_items(
        self,
        order_id: str,
        skus: list[str],
        refund_method: Literal["original_payment", "gift_card"],
    ) -> dict[str, Any]:
        """Return items of a delivered order (within 30 days); refund to the original payment
        method or to a gift card."""
        oid, order = self._own_order("return_items", order_id)
        self._returnable("return_items", oid, order)
        chosen = [i for i in order["items"] if i["sku"] in set(skus)]
        if not chosen or len(chosen) != len(set(skus)):
            raise KeyError(f"order {oid} has no item {sorted(set(skus))}")
        if any(i["status"] != "ordered" for i in chosen):
            raise ValueError("an item was already returned or exchanged")
        amount = _money(sum(i["price"] * i["quantity"] for i in chosen))
        for item in chosen:
            item["status"] = "returned"
        method = order["payment"] if refund_method == "original_payment" else "gift_card"
        order["refunds"].append({"amount": amount, "method": method})
        if refund_method == "gift_card":
            customer = self.db["customers"][order["customer"]]
            customer["gift_card_balance"] = _money(customer["gift_card_balance"] + amount)
        return_id = f"R{len(self.db['returns']) + 1}"
        self.db["returns"][return_id] = {
            "order": oid,
            "skus": sorted(i["sku"] for i in chosen),
            "amount": amount,
            "method": method,
        }
        return {"return_id": return_id, "refund": amount, "method": method}

    def exchange_item(self, order_id: str, sku: str, new_sku: str) -> dict[str, Any]:
        """Exchange an item of a delivered order (within 30 days) for another variant of the
        same product that is in stock."""
        oid, order = self._own_order("exchange_item", order_id)
        self._returnable("exchange_item", oid, order)
        item = next((i for i in order["items"] if i["sku"] == sku), None)
        if item is None or item["status"] != "ordered":
            raise KeyError(f"order {oid} has no item {sku!r} to exchange")
        product = self.db["products"].get(new_sku)
        if product is None or _family(new_sku) != _family(sku) or new_sku == sku:
            raise ValueError(f"{new_sku!r} is not another variant of {sku!r}")
        if product["stock"] < item["quantity"]:
            raise ValueError(f"{new_sku} is out of stock")
        product["stock"] -= item["quantity"]
        item["status"] = "exchanged"
        item["exchanged_for"] = new_sku
        return {"order_id": oid, "sku": sku, "new_sku": new_sku, "status": "exchanged"}

    def change_address(
        self, order_id: str, street: str, city: str, state: str, zip_code: str
    ) -> dict[str, Any]:
        """Change the shipping address of a processing order."""
        oid, order = self._own_order("change_address", order_id)
        if order["status"] != "processing":
            raise self._refuse(
                "change_address", f"change_address on {oid}, which is {order['status']}"
            )
        order["address"] = _address(street.strip(), city.strip(), state.strip(), zip_code.strip())
        return {"order_id": oid, "address": order["address"]}

    def transfer_to_human(self, summary: str) -> str:
        """Transfer the customer to a human agent, with a summary of their request."""
        self.db["transfers"].append({"customer": self._customer})
        return "Transfer successful: a human agent will take over."
