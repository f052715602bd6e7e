"""StateModule and MessageLog: AgentScope's semantics, with its bugs fixed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from praisonsession import InvalidValueError, MessageLog, StateDictError, StateModule


class ClassA(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.cnt = 123
        self.register_state("cnt")


class ClassB(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.a = ClassA()
        self.c = "Hello, world!"
        self.register_state("c")


def test_the_agentscope_tutorial_prints_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    obj_b = ClassB()
    print("State of obj_b.a:")
    print(obj_b.a.state_dict())
    print("\nState of obj_b:")
    print(json.dumps(obj_b.state_dict(), indent=4))
    assert capsys.readouterr().out == (
        "State of obj_b.a:\n{'cnt': 123}\n\nState of obj_b:\n"
        '{\n    "a": {\n        "cnt": 123\n    },\n    "c": "Hello, world!"\n}\n'
    )


def test_nested_modules_register_themselves_and_come_first() -> None:
    b = ClassB()
    assert list(b.state_dict()) == ["a", "c"]


def test_state_dict_is_detached_from_the_object() -> None:
    class Holder(StateModule):
        def __init__(self) -> None:
            super().__init__()
            self.items = [{"x": 1}]
            self.register_state("items")

    holder = Holder()
    state = holder.state_dict()
    state["items"][0]["x"] = 99
    assert holder.items == [{"x": 1}]
    holder.load_state_dict(state)
    state["items"].append("later")
    assert holder.items == [{"x": 99}]


def test_load_restores_a_saved_state() -> None:
    b = ClassB()
    saved = b.state_dict()
    b.a.cnt, b.c = 0, "changed"
    b.load_state_dict(saved)
    assert (b.a.cnt, b.c) == (123, "Hello, world!")


def test_strict_load_names_missing_and_unexpected_keys_at_every_depth() -> None:
    b = ClassB()
    with pytest.raises(StateDictError) as caught:
        b.load_state_dict({"a": {"cnt": 1, "zzz": 2}, "extra": 3})
    assert caught.value.missing_keys == ["c"]
    assert caught.value.unexpected_keys == ["a.zzz", "extra"]
    assert isinstance(caught.value, KeyError)  # what AgentScope raised
    assert "a.zzz" in str(caught.value) and "strict=False" in str(caught.value)


def test_a_failed_load_changes_nothing() -> None:
    b = ClassB()
    with pytest.raises(StateDictError):
        b.load_state_dict({"a": {"cnt": 5}})  # "c" missing: a.cnt must not be applied
    assert b.a.cnt == 123


def test_non_strict_load_is_propagated_to_children_and_reports() -> None:
    b = ClassB()
    result = b.load_state_dict({"a": {"zzz": 1}, "c": "new"}, strict=False)
    assert result.missing_keys == ["a.cnt"]
    assert result.unexpected_keys == ["a.zzz"]
    assert (b.a.cnt, b.c) == (123, "new")


def test_a_state_that_is_not_a_dict_is_refused() -> None:
    with pytest.raises(InvalidValueError, match="must be a dict"):
        ClassB().load_state_dict({"a": [1, 2], "c": "x"})


def test_reassigning_a_module_attribute_to_a_plain_value_unregisters_it() -> None:
    b = ClassB()
    b.a = None  # AgentScope kept a stale entry, so its own state_dict failed to load back
    assert b.state_dict() == {"c": "Hello, world!"}
    b.load_state_dict(b.state_dict())


def test_reassigning_a_module_keeps_its_position() -> None:
    b = ClassB()
    b.a = ClassA()
    b.a.cnt = 7
    assert b.state_dict() == {"a": {"cnt": 7}, "c": "Hello, world!"}


def test_deleting_an_attribute_unregisters_it() -> None:
    b = ClassB()
    del b.c
    del b.a
    assert b.state_dict() == {}


def test_attributes_need_super_init_first() -> None:
    class Forgetful(StateModule):
        def __init__(self) -> None:
            self.sub = ClassA()

    with pytest.raises(AttributeError, match="super"):
        Forgetful()


def test_register_state_checks_what_it_is_given() -> None:
    class Thing(StateModule):
        def __init__(self) -> None:
            super().__init__()
            self.when = object()
            self.sub = ClassA()

    thing = Thing()
    with pytest.raises(AttributeError):
        thing.register_state("does_not_exist")
    with pytest.raises(InvalidValueError, match="custom_to_json"):
        thing.register_state("when")
    with pytest.raises(ValueError, match="module"):
        thing.register_state("sub")


def test_custom_converters_round_trip_any_object() -> None:
    class Point:
        def __init__(self, x: int, y: int) -> None:
            self.x, self.y = x, y

    class Shape(StateModule):
        def __init__(self) -> None:
            super().__init__()
            self.corner = Point(1, 2)
            self.register_state(
                "corner",
                custom_to_json=lambda p: [p.x, p.y],
                custom_from_json=lambda v: Point(*v),
            )

    shape = Shape()
    state = shape.state_dict()
    assert state == {"corner": [1, 2]}
    shape.corner = Point(0, 0)
    shape.load_state_dict(json.loads(json.dumps(state)))
    assert (shape.corner.x, shape.corner.y) == (1, 2)


def test_a_value_that_stopped_being_json_is_reported_at_save() -> None:
    a = ClassA()
    a.cnt = {1, 2}
    with pytest.raises(InvalidValueError, match=r"ClassA\.cnt"):
        a.state_dict()


def test_an_agentscope_style_override_is_used_for_children() -> None:
    class Custom(StateModule):
        def __init__(self) -> None:
            super().__init__()
            self.data: dict[str, Any] = {"k": 1}

        def state_dict(self) -> dict[str, Any]:
            return {"content": self.data}

        def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
            self.data = state_dict["content"]

    class Parent(StateModule):
        def __init__(self) -> None:
            super().__init__()
            self.custom = Custom()

    parent = Parent()
    assert parent.state_dict() == {"custom": {"content": {"k": 1}}}
    parent.load_state_dict({"custom": {"content": {"k": 2}}})
    assert parent.custom.data == {"k": 2}


# -- MessageLog --------------------------------------------------------------------------------


def test_message_log_behaves_like_a_list_of_dicts() -> None:
    log = MessageLog([{"role": "user", "content": "hi"}])
    log.append({"role": "assistant", "content": "hello"})
    log.extend([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert len(log) == 4
    assert log[1]["content"] == "hello"
    assert [m["content"] for m in log[2:]] == ["a", "b"]
    assert log.index({"role": "user", "content": "a"}) == 2
    assert log.pop()["content"] == "b"
    del log[0]
    log.insert(0, {"role": "system", "content": "be brief"})
    assert [m["role"] for m in log] == ["system", "assistant", "user"]
    log.clear()
    assert len(log) == 0 and log == []
    assert repr(log) == "MessageLog(0 messages)"


def test_message_log_copies_what_it_is_given() -> None:
    message = {"role": "user", "content": "hi"}
    log = MessageLog()
    log.append(message)
    message["content"] = "changed later"
    assert log[0]["content"] == "hi"


def test_message_log_refuses_what_is_not_a_json_dict() -> None:
    log = MessageLog()
    with pytest.raises(InvalidValueError, match="dicts"):
        log.append("hello")
    with pytest.raises(InvalidValueError):
        log.append({"content": {1, 2}})
    with pytest.raises(InvalidValueError):
        log.extend([{"ok": 1}, "not ok"])
    assert len(log) == 0


def test_message_log_state_round_trips() -> None:
    log = MessageLog([{"role": "user", "content": "hi"}])
    state = log.state_dict()
    assert state == {"messages": [{"role": "user", "content": "hi"}]}
    other = MessageLog()
    other.load_state_dict(state)
    assert other == log
    with pytest.raises(StateDictError):
        other.load_state_dict({})


class Chat(StateModule):
    def __init__(self) -> None:
        super().__init__()
        self.history = MessageLog()
        self.inner = ClassA()
        self.title = "maths"
        self.register_state("title")


def test_the_codec_takes_logs_out_of_a_document_and_puts_them_back() -> None:
    from praisonsession.state.codec import attach_logs, load_states, logs_of, snapshot_module

    chat = Chat()
    chat.history.append({"role": "user", "content": "hi"})
    logs: dict[str, MessageLog] = {}
    document = snapshot_module(chat, "chat", logs)
    assert list(logs) == ["chat.history"] and logs["chat.history"] is chat.history
    assert document == {"history": {}, "inner": {"cnt": 123}, "title": "maths"}
    assert logs_of(chat, "chat") == logs
    stored = {"chat.history": [{"role": "user", "content": "hi"}]}
    whole = attach_logs(chat, "chat", document, stored)
    again = Chat()
    load_states({"chat": again}, {"chat": whole}, "a test")
    assert again.history.messages_since(0) == stored["chat.history"]
    broken = Chat()
    with pytest.raises(StateDictError):  # a missing key: nothing of it is loaded
        load_states({"chat": broken}, {"chat": {"title": "other", "history": {}}}, "a test")
    assert broken.title == "maths" and len(broken.history) == 0


def test_a_log_view_reads_every_message_without_a_copy_and_sees_appends() -> None:
    log = MessageLog([{"role": "user", "content": f"m{i}"} for i in range(3)])
    view = log.view()
    assert [m["content"] for m in view] == ["m0", "m1", "m2"] and view is log.view()
    log.append({"role": "assistant", "content": "m3"})
    assert len(view) == 4 and view[-1]["content"] == "m3"
    assert log.messages_since(0) == list(view) and log.messages_since(0) is not view
