"""Outputs that name a tool but carry no `call_id`, as Codex CLI sends its goal's objective: read by
`items_to_messages` as the answer to the one open call of that name, else as a user message that
comes after the results of the calls still open (a Chat Completions turn is an assistant message
with calls, then their results, with nothing between them)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from so_middleware import ChatMessage, DataContent, FunctionCallContent, FunctionResultContent, TextContent
from so_middleware.wire.responses import WireError
from so_middleware.wire.responses_items import item_to_message, items_to_messages

USER = {"type": "message", "role": "user", "content": "Go."}
# What Codex CLI 0.169 sends after the result of its `create_goal` call
GOAL = {"type": "function_call_output", "name": "goal_objective", "namespace": "agent", "output": "Ship it."}


def _call(call_id: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}", **extra}


def _output(call_id: str, output: str = "ok") -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def _shape(messages: list[ChatMessage]) -> list[tuple[str, Any]]:
    """(role, what each content is) of each message: a call's id, a result's id, or the text."""

    def part(content: Any) -> Any:
        if isinstance(content, (FunctionCallContent, FunctionResultContent)):
            return content.call_id
        return content.text if isinstance(content, TextContent) else type(content).__name__

    return [(m.role, [part(c) for c in m.contents]) for m in messages]


def test_codex_goal_objective_after_its_calls_result_is_a_user_message() -> None:
    items = [USER, _call("c1", "create_goal"), _output("c1"), GOAL]
    assert _shape(items_to_messages(items)) == [
        ("user", ["Go."]), ("assistant", ["c1"]), ("tool", ["c1"]), ("user", ["agent.goal_objective: Ship it."])]  # fmt: skip


def test_an_uncalled_output_waits_for_the_results_of_the_calls_still_open() -> None:
    items = [USER, _call("c1", "create_goal"), _call("c2", "exec_command"), _output("c1"), GOAL, _output("c2")]
    assert _shape(items_to_messages(items))[1:] == [
        ("assistant", ["c1", "c2"]), ("tool", ["c1"]), ("tool", ["c2"]), ("user", ["agent.goal_objective: Ship it."])]  # fmt: skip


def test_an_uncalled_output_comes_before_the_next_turn_when_a_call_stays_open() -> None:
    items = [USER, _call("c1", "a"), _call("c2", "b"), _output("c1"), GOAL, USER]
    assert [role for role, _ in _shape(items_to_messages(items))] == ["user", "assistant", "tool", "user", "user"]
    assert _shape(items_to_messages(items))[3] == ("user", ["agent.goal_objective: Ship it."])


def test_an_output_without_call_id_answers_the_one_open_call_of_its_name() -> None:
    items = [USER, _call("c1", "lookup"), _call("c2", "other"), {"type": "function_call_output", "name": "lookup",
             "output": "found"}, _output("c2")]  # fmt: skip
    messages = items_to_messages(items)
    assert _shape(messages)[1:] == [("assistant", ["c1", "c2"]), ("tool", ["c1"]), ("tool", ["c2"])]
    assert messages[2].contents[0].result == "found"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "calls",
    [[_call("c1", "lookup"), _call("c2", "lookup")],  # two open calls of the name: which one is unknown
     [_call("c1", "lookup", namespace="tools")]],  # the name matches, the namespace does not
    ids=["two_calls_of_the_name", "another_namespace"],
)  # fmt: skip
def test_an_output_without_call_id_that_matches_no_one_call_is_a_user_message(calls: list[dict[str, Any]]) -> None:
    output = {"type": "function_call_output", "name": "lookup", "namespace": "agent", "output": "found"}
    messages = items_to_messages([USER, *calls, output])
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    assert _shape(messages)[-1] == ("user", ["agent.lookup: found"])


def test_an_uncalled_output_of_content_parts_keeps_them() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    output = {"type": "function_call_output", "name": "view", "output": [{"type": "input_text", "text": "a dot"},
                                                                            image]}  # fmt: skip
    (message,) = items_to_messages([output])
    assert message.role == "user" and _shape([message]) == [("user", ["view:", "a dot", "DataContent"])]
    assert isinstance(message.contents[2], DataContent) and message.contents[2].media_type == "image/png"


def test_the_items_read_are_not_changed() -> None:
    items = [USER, _call("c1", "lookup"), {"type": "function_call_output", "name": "lookup", "output": "x"}, GOAL]
    before = copy.deepcopy(items)
    items_to_messages(items)
    assert items == before


@pytest.mark.parametrize(
    "item",
    [{"type": "function_call_output", "output": "no call_id, no name"},
     {"type": "function_call_output", "name": "goal_objective"},
     {"type": "custom_tool_call_output", "call_id": 7, "output": "x"}],
    ids=["no_name", "no_output", "call_id_not_a_string"],
)  # fmt: skip
def test_an_output_that_answers_nothing_nameable_is_an_error_naming_call_id(item: dict[str, Any]) -> None:
    with pytest.raises(WireError, match=r"input\[2\] needs a string call_id and an output") as raised:
        item_to_message(item, "input[2]")
    assert raised.value.param == "input[2].call_id"


def test_an_uncalled_output_of_another_kind_is_an_error_naming_output() -> None:
    with pytest.raises(WireError, match="string or a list") as raised:
        item_to_message({"type": "function_call_output", "name": "n", "output": 3}, "input[0]")
    assert raised.value.param == "input[0].output"
