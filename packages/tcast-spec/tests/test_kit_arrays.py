"""tcast.kit.own_hooks: which hooks a subclass defines below its library's plain array type
(the rule by which engines take or refuse array subclasses; EngineBase.refusal)."""

from __future__ import annotations

from tcast.kit import own_hooks


def _inert(*args, **kwargs):
    return NotImplemented


class Base:
    def __dispatch__(self):
        return "base"


class Plain(Base):
    note = "attributes only"


class Dispatching(Base):
    @classmethod
    def __dispatch__(cls):
        return "own"


class Disabled(Base):
    __dispatch__ = _inert


class FromDispatching(Dispatching):
    note = "inherits the override"


class Reenabled(Disabled):
    def __dispatch__(self):
        return "own again"


HOOKS = ("__dispatch__", "__finalize__")


def test_the_base_and_attribute_only_subclasses_have_no_hooks_of_their_own():
    assert own_hooks(Base, Base, HOOKS) == ()
    assert own_hooks(Plain, Base, HOOKS) == ()


def test_a_hook_defined_below_the_base_counts_also_when_inherited_or_a_classmethod():
    assert own_hooks(Dispatching, Base, HOOKS) == ("__dispatch__",)
    assert own_hooks(FromDispatching, Base, HOOKS) == ("__dispatch__",)


def test_a_hook_set_to_an_inert_value_does_not_count_but_the_nearest_definition_decides():
    assert own_hooks(Disabled, Base, HOOKS) == ("__dispatch__",)
    assert own_hooks(Disabled, Base, HOOKS, inert=(_inert,)) == ()
    assert own_hooks(Reenabled, Base, HOOKS, inert=(_inert,)) == ("__dispatch__",)


def test_hooks_are_reported_in_the_order_asked():
    class Both(Base):
        def __finalize__(self):
            return None

        def __dispatch__(self):
            return None

    assert own_hooks(Both, Base, HOOKS) == HOOKS
    assert own_hooks(Both, Base, HOOKS[::-1]) == HOOKS[::-1]
