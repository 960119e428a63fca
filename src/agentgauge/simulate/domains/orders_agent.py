"""A SCRIPTED agent for the order desk: rules and keywords, no model (demos, docs, tests).

``DeskAgent`` (``--agent agentgauge.simulate.domains.orders_agent:DeskAgent``) plays the agent
of :mod:`agentgauge.simulate.domains.orders` without any model or network. Each turn it reads
the whole conversation (its task's ``input.messages``) and works out, from keywords and
patterns in the user's messages, who the customer is (email, or full name and zip code), what
they want (the intent of their latest message that states one: cancel, return, exchange,
address, status, or something out of scope), which order, and the details (reason, items,
refund method, variant, address). It then follows the policy: it identifies the customer,
asks for what is missing, refuses what the policy forbids, lists the change and asks for a
"yes", and only then calls the tool and reports the result with the amount.

It is deliberately imperfect, so that a run shows what agentgauge measures:

- it reads keywords, not meaning: "don't cancel it, change the address instead" is read as a
  cancellation (the first request word wins);
- ``slip_rate`` (a parameter, default 0.15; doubled for hard scenarios, halved for easy ones)
  is the chance that a conversation has a slip, drawn from the trial's seed and the scenario:
  the wrong detail (the other cancellation reason or refund method), a change announced as done
  without the tool being called, or a refused request tried anyway without checking the policy
  (the environment refuses it and reports the violation). Trials differ, so pass^k falls below
  pass@k.

Steps carry simulated durations (0.3 s a message, 0.05 s a call, 0.2 s a result): its traces
never depend on when they ran.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentgauge.agents.protocol import Recorder
from agentgauge.model import JSON, Difficulty, Task

__all__ = ["DeskAgent"]

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_ORDER = re.compile(r"\b[Ww]\s?-?(\d{4})\b")
_ZIP = re.compile(r"\bzip(?:\s*code)?(?:\s*is)?[\s:]*(\d{5})\b", re.IGNORECASE)
_NAME = re.compile(r"(?:my name is|I am|I'm|this is)\s+([A-Z][a-z]+(?:\s[A-Z][a-z]+)+)")
_ADDRESS = re.compile(
    r"(?<![\w-])(\d+ [A-Za-z][A-Za-z0-9 .]*?),\s*([A-Za-z .]+?),\s*([A-Z]{2}),?\s*(\d{5})"
)
_YES = re.compile(r"\b(yes|yeah|yep|please do|go ahead|confirm(?:ed)?|sure|ok|okay)\b", re.I)
_NO = re.compile(r"^\s*(no|nope|don't|do not)\b", re.I)
_ASK_CONFIRM = "Shall I proceed?"
_INTENTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "transfer",
        (
            "price match",
            "discount",
            "complaint",
            "manager",
            "human",
            "delete my account",
            "close my account",
        ),
    ),
    ("cancel", ("cancel",)),
    ("exchange", ("exchange", "swap")),
    ("return", ("return", "send back", "send it back")),
    ("address", ("address", "ship it to", "deliver it to")),
    ("status", ("where is", "status", "track", "arrive")),
)
_VARIANTS = ("black", "white", "blue", "red", "us", "uk")
_WRITES = {
    "cancel": "cancel_order",
    "return": "return_items",
    "exchange": "exchange_item",
    "address": "change_address",
}
_MESSAGE_S, _CALL_S, _RESULT_S = 0.3, 0.05, 0.2


def _intent(text: str) -> str | None:
    """The request a message states: the one whose word comes first."""
    lowered = text.lower()
    found = []
    for intent, words in _INTENTS:
        positions = [m.start() for w in words for m in re.finditer(rf"\b{re.escape(w)}", lowered)]
        if positions:
            found.append((min(positions), intent))
    return min(found)[1] if found else None


def _keyword(name: str) -> str:
    """``Desk lamp (black)`` -> ``lamp``: the word a customer uses for an item."""
    return name.split("(")[0].split()[-1].lower()


def _variant(name: str) -> str | None:
    match = re.search(r"\((\w+)\)", name)
    return match.group(1).lower() if match else None


@dataclass
class _Call:
    name: str
    arguments: dict[str, Any]
    result: Any
    error: str | None


class _Conversation:
    """What the agent reads off the conversation so far."""

    def __init__(self, messages: list[Mapping[str, Any]]) -> None:
        self.user: list[str] = []
        self.agent: list[str] = []
        self.calls: list[_Call] = []
        pending: dict[str, tuple[str, dict[str, Any]]] = {}
        for message in messages:
            role, content = message.get("role"), message.get("content")
            if role == "user":
                self.user.append(str(content or ""))
            elif role == "assistant":
                if content:
                    self.agent.append(str(content))
                for call in message.get("tool_calls") or []:
                    function = call.get("function", {})
                    arguments = json.loads(function.get("arguments") or "{}")
                    pending[call.get("id")] = (function.get("name", ""), arguments)
            elif role == "tool" and message.get("tool_call_id") in pending:
                name, arguments = pending.pop(message["tool_call_id"])
                text = str(content or "")
                if text.startswith("error:"):
                    self.calls.append(_Call(name, arguments, None, text[6:].strip()))
                else:
                    self.calls.append(_Call(name, arguments, json.loads(text), None))

    @property
    def latest(self) -> str:
        return self.user[-1] if self.user else ""

    def request(self) -> tuple[str | None, int]:
        """The current request and the index of the user message that states it."""
        for i in range(len(self.user) - 1, -1, -1):
            intent = _intent(self.user[i])
            if intent is not None:
                return intent, i
        return None, len(self.user)

    def since(self, index: int) -> str:
        return "\n".join(self.user[index:])

    def every(self) -> str:
        return "\n".join(self.user)

    def customer(self) -> dict[str, Any] | None:
        for call in reversed(self.calls):
            if call.name == "find_customer" and call.error is None:
                return dict(call.result)
        return None

    def failed_lookup(self, arguments: dict[str, Any]) -> bool:
        return any(
            c.name == "find_customer" and c.error is not None and c.arguments == arguments
            for c in self.calls
        )

    def identity(self) -> dict[str, Any] | None:
        text = self.every()
        emails = _EMAIL.findall(text)
        if emails:
            return {"email": emails[-1]}
        names, zips = _NAME.findall(text), _ZIP.findall(text)
        if names and zips:
            return {"name": names[-1], "zip_code": zips[-1]}
        return None

    def order(self, index: int) -> str | None:
        for text in (self.user[index] if index < len(self.user) else "", self.every()):
            found = _ORDER.findall(text)
            if found:
                return f"W{found[-1]}"
        return None

    def reason(self) -> str | None:
        """The cancellation reason the user gave last."""
        for text in reversed(self.user):
            lowered = text.lower()
            if "no longer need" in lowered:
                return "no longer needed"
            if "mistake" in lowered:
                return "ordered by mistake"
        return None

    def confirmed(self) -> bool:
        asked = bool(self.agent) and _ASK_CONFIRM in self.agent[-1]
        return asked and bool(_YES.search(self.latest)) and not _NO.search(self.latest)

    def declined(self) -> bool:
        asked = bool(self.agent) and _ASK_CONFIRM in self.agent[-1]
        return asked and bool(_NO.search(self.latest))

    def done(self, intent: str, order_id: str) -> bool:
        tool = _WRITES.get(intent)
        return any(
            c.name == tool and c.error is None and c.arguments.get("order_id") == order_id
            for c in self.calls
        )


class DeskAgent:
    """The SCRIPTED order-desk agent (see the module docstring)."""

    name = "desk-agent [SIMULATION]"
    trace_metadata: Mapping[str, JSON] = {
        "simulation": True,
        "simulator": "agentgauge.simulate.domains.orders_agent",
        "note": "SIMULATION: a scripted agent, no model was called",
    }
    simulated_time = True
    """Its steps carry simulated durations, not wall-clock times."""

    def run(self, task: Task, params: Mapping[str, JSON], recorder: Recorder) -> str:
        """Take one turn of an order-desk conversation.

        Args:
            task: the turn (input ``{"messages": [...]}``).
            params: ``slip_rate`` (optional, default 0.15).
            recorder: where the steps go; its ``tools`` are the desk's.
        """
        messages = task.input.get("messages") if isinstance(task.input, dict) else None
        listed = messages if isinstance(messages, list) else []
        conv = _Conversation([m for m in listed if isinstance(m, dict)])
        slip = _slip(recorder.seed, task, params)
        turn = _Turn(conv, recorder, slip)
        reply = turn.respond()
        recorder.llm(reply, duration_s=_MESSAGE_S)
        return reply


def _slip(seed: int | None, task: Task, params: Mapping[str, JSON]) -> str | None:
    rate = params.get("slip_rate", 0.15)
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
        raise ValueError(f"slip_rate must be a number within [0, 1], got {rate!r}")
    scale = {Difficulty.easy: 0.5, Difficulty.hard: 2.0}.get(task.difficulty, 1.0)  # type: ignore[arg-type]
    rng = random.Random(f"{seed or 0}:{task.id}")
    if rng.random() >= min(1.0, float(rate) * scale):
        return None
    return rng.choice(["wrong_detail", "no_call", "skip_check"])


class _Turn:
    """One reply of the desk agent."""

    def __init__(self, conv: _Conversation, recorder: Recorder, slip: str | None) -> None:
        self.conv = conv
        self.recorder = recorder
        self.slip = slip

    def call(self, tool: str, /, **arguments: Any) -> tuple[Any, str | None]:
        """Call a desk tool, recorded with simulated durations; its result or its error."""
        chosen = self.recorder.tools[tool]
        call_id = self.recorder.tool_call(tool, arguments, duration_s=_CALL_S)
        try:
            result = chosen.fn(**chosen.validate(arguments))
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            self.recorder.tool_result(call_id, error=error, duration_s=_RESULT_S)
            return None, error
        self.recorder.tool_result(call_id, result, duration_s=_RESULT_S)
        return result, None

    def respond(self) -> str:
        conv = self.conv
        intent, index = conv.request()
        customer = conv.customer()
        if customer is None:
            identity = conv.identity()
            if identity is None:
                return (
                    "I can help with that. First, could you give me your email address, or "
                    "your full name and zip code?"
                )
            if conv.failed_lookup(identity):
                return _NOT_FOUND
            found, error = self.call("find_customer", **identity)
            if error is not None:
                return _NOT_FOUND
            customer = dict(found)
        if intent == "transfer":
            self.call("transfer_to_human", summary=conv.latest)
            return "I have transferred you to a human agent, who will take it from here."
        first = str(customer["name"]).split()[0]
        if intent is None:
            return f"Thank you, {first}. How can I help you with your orders?"
        order_id = conv.order(index)
        if order_id is None:
            info, _ = self.call("get_customer", customer_id=customer["customer_id"])
            listed = ", ".join(f"{oid} ({status})" for oid, status in info["orders"].items())
            return f"Which order is it about? Your orders: {listed}."
        if conv.done(intent, order_id):
            return "Is there anything else I can help you with?"
        if conv.declined():
            return "All right, I will not make that change. Is there anything else I can do?"
        order, error = self.call("get_order", order_id=order_id)
        if error is not None:
            return f"I could not find order {order_id} on your account. Could you check the number?"
        handler = getattr(self, f"_{intent}")
        reply: str = handler(order_id, order, index)
        return reply

    # requests -----------------------------------------------------------------------------

    def _status(self, oid: str, order: dict[str, Any], index: int) -> str:
        delivered = f", delivered on {order['delivered']}" if "delivered" in order else ""
        return f"Your order {oid} is {order['status']}{delivered}."

    def _cancel(self, oid: str, order: dict[str, Any], index: int) -> str:
        if order["status"] != "processing":
            refused = (
                f"I'm sorry, order {oid} is {order['status']}, so it can no longer be cancelled."
            )
            return self._unchecked("cancel_order", refused, order_id=oid, reason="no longer needed")
        reason = self.conv.reason()
        if reason is None:
            return (
                "Could you tell me why you want to cancel it: is it no longer needed, or was it "
                "ordered by mistake?"
            )
        amount = _total(order["items"])
        payment = _payment(order["payment"])
        if not self.conv.confirmed():
            return (
                f"To confirm: I will cancel order {oid} ({_names(order['items'])}) as "
                f"{reason}, and refund ${amount:.2f} to your {payment}. {_ASK_CONFIRM}"
            )
        if self.slip == "wrong_detail":
            reason = "ordered by mistake" if reason == "no longer needed" else "no longer needed"
        done = (
            f"Done: order {oid} is cancelled and ${amount:.2f} will be refunded to your {payment}."
        )
        if self.slip == "no_call":
            return done
        _, error = self.call("cancel_order", order_id=oid, reason=reason)
        if error is not None:
            return f"I'm sorry, I could not cancel order {oid}: {error}"
        return done

    def _unchecked(self, tool: str, refused: str, **arguments: Any) -> str:
        """A refusal; with the ``skip_check`` slip, the call is tried first (the desk refuses
        it and reports the violation)."""
        if self.slip != "skip_check":
            return refused
        _, error = self.call(tool, **arguments)
        return refused if error is None else f"I'm sorry, that did not work: {error}"

    def _window(self, oid: str, order: dict[str, Any], what: str) -> str | None:
        if order["status"] != "delivered":
            return (
                f"I'm sorry, order {oid} is {order['status']}, not delivered, so it cannot be "
                f"{what} yet."
            )
        if order.get("days_since_delivery", 0) > 30:
            return (
                f"I'm sorry, order {oid} was delivered on {order['delivered']}, more than 30 days "
                f"ago, so it can no longer be {what}."
            )
        return None

    def _items(self, order: dict[str, Any], index: int) -> list[dict[str, Any]] | None:
        items = [i for i in order["items"] if i["status"] == "ordered"]
        text = self.conv.since(index).lower()
        if len(items) == 1 or re.search(r"\b(everything|all (?:the )?items|whole order)\b", text):
            return items
        named = [i for i in items if re.search(rf"\b{_keyword(i['name'])}s?\b", text)]
        return named or None

    def _return(self, oid: str, order: dict[str, Any], index: int) -> str:
        refused = self._window(oid, order, "returned")
        if refused is not None:
            skus = [i["sku"] for i in order["items"]]
            return self._unchecked(
                "return_items", refused, order_id=oid, skus=skus, refund_method="original_payment"
            )
        items = self._items(order, index)
        if not items:
            return f"Which items would you like to return: {_names(order['items'])}?"
        text = self.conv.since(index).lower()
        method = (
            "gift_card"
            if "gift card" in text
            else "original_payment"
            if re.search(r"\b(original|card|paypal|same)\b", text)
            else None
        )
        if method is None:
            return "Would you like the refund to your original payment method, or as a gift card?"
        amount = _total(items)
        where = "a gift card" if method == "gift_card" else f"your {_payment(order['payment'])}"
        if not self.conv.confirmed():
            return (
                f"To confirm: I will return {_names(items)} from order {oid} and refund "
                f"${amount:.2f} to {where}. {_ASK_CONFIRM}"
            )
        if self.slip == "wrong_detail":
            method = "original_payment" if method == "gift_card" else "gift_card"
        if self.slip == "no_call":
            return f"Done: the return is created and ${amount:.2f} will be refunded to {where}."
        skus = [i["sku"] for i in items]
        result, error = self.call("return_items", order_id=oid, skus=skus, refund_method=method)
        if error is not None:
            return f"I'm sorry, I could not create the return: {error}"
        return (
            f"Done: return {result['return_id']} is created and ${amount:.2f} will be refunded "
            f"to {where}."
        )

    def _exchange(self, oid: str, order: dict[str, Any], index: int) -> str:
        refused = self._window(oid, order, "exchanged")
        if refused is not None:
            return refused
        text = self.conv.since(index).lower()
        items = self._items(order, index)
        if not items or len(items) != 1:
            return f"Which item would you like to exchange: {_names(order['items'])}?"
        item = items[0]
        current = _variant(item["name"])
        wanted = [v for v in _VARIANTS if re.search(rf"\b{v}\b", text) and v != current]
        if not wanted:
            return f"Which variant would you like instead of the {item['name']}?"
        product, _ = self.call("get_product", sku=item["sku"])
        target = next(
            (
                (sku, info)
                for sku, info in product["variants"].items()
                if _variant(info["name"]) == wanted[0]
            ),
            None,
        )
        if target is None:
            return f"I'm sorry, the {item['name']} does not come in {wanted[0]}."
        new_sku, info = target
        if info["stock"] < item["quantity"]:
            return f"I'm sorry, the {info['name']} is out of stock, so I cannot exchange it."
        if not self.conv.confirmed():
            return (
                f"To confirm: I will exchange the {item['name']} of order {oid} for the "
                f"{info['name']}, at the same price. {_ASK_CONFIRM}"
            )
        _, error = self.call("exchange_item", order_id=oid, sku=item["sku"], new_sku=new_sku)
        if error is not None:
            return f"I'm sorry, I could not exchange it: {error}"
        return f"Done: your {item['name']} will be exchanged for the {info['name']}."

    def _address(self, oid: str, order: dict[str, Any], index: int) -> str:
        found = _ADDRESS.findall(self.conv.since(index))
        if order["status"] != "processing":
            refused = (
                f"I'm sorry, order {oid} is {order['status']}, so its address can no longer be "
                "changed."
            )
            if not found:
                return refused
            street, city, state, zip_code = found[-1]
            return self._unchecked(
                "change_address",
                refused,
                order_id=oid,
                street=street,
                city=city,
                state=state,
                zip_code=zip_code,
            )
        if not found:
            return "What is the new address: street, city, state and zip code?"
        street, city, state, zip_code = found[-1]
        shown = f"{street}, {city}, {state} {zip_code}"
        if not self.conv.confirmed():
            return f"To confirm: order {oid} will ship to {shown}. {_ASK_CONFIRM}"
        if self.slip == "no_call":
            return f"Done: order {oid} will now ship to {shown}."
        _, error = self.call(
            "change_address",
            order_id=oid,
            street=street,
            city=city,
            state=state,
            zip_code=zip_code,
        )
        if error is not None:
            return f"I'm sorry, I could not change the address: {error}"
        return f"Done: order {oid} will now ship to {shown}."


_NOT_FOUND = (
    "I could not find an account with those details. Could you check your email address, or "
    "give me your full name and zip code?"
)


def _total(items: list[dict[str, Any]]) -> float:
    return round(float(sum(i["price"] * i["quantity"] for i in items)) + 1e-9, 2)


def _names(items: list[dict[str, Any]]) -> str:
    return ", ".join(
        (f"{i['quantity']} x {i['name']}" if i["quantity"] > 1 else i["name"]) for i in items
    )


def _payment(method: str) -> str:
    return {"card": "card", "paypal": "PayPal account", "gift_card": "gift card"}.get(
        method, method
    )
