"""`fast_init` keeps everything a frozen dataclass promises, only its construction is cheaper."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import InitVar, dataclass, field

import pytest

from flipflop.analysis.work import SiteWork
from flipflop.fast_init import fast_init
from flipflop.model.predict import Prediction


@dataclass(frozen=True)
class PlainExample:
    name: str
    count: int = 3
    tags: tuple[str, ...] = ()
    extra: list[int] = field(default_factory=lambda: [7])
    hidden: float = field(default=0.5, init=False)
    weight: float = field(default=1.0, compare=False)
    label: str = field(default="k", kw_only=True)


@fast_init
@dataclass(frozen=True)
class FastExample:  # the same fields, built by fast_init
    name: str
    count: int = 3
    tags: tuple[str, ...] = ()
    extra: list[int] = field(default_factory=lambda: [7])
    hidden: float = field(default=0.5, init=False)
    weight: float = field(default=1.0, compare=False)
    label: str = field(default="k", kw_only=True)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("a",), {}),
        (("b", 5, ("x", "y")), {}),
        (("c",), {"extra": [1, 2], "weight": 2.0, "label": "z"}),
        ((), {"name": "d", "count": 0}),
    ],
)
def test_instances_equal_the_generated_init(args: tuple[object, ...],
                                            kwargs: dict[str, object]) -> None:  # fmt: skip
    plain, fast = PlainExample(*args, **kwargs), FastExample(*args, **kwargs)
    assert dataclasses.asdict(plain) == dataclasses.asdict(fast)
    assert repr(plain).split("(", 1)[1] == repr(fast).split("(", 1)[1]


def test_default_factories_give_each_instance_its_own_value() -> None:
    first, second = FastExample("a"), FastExample("b")
    assert first.extra == [7] and first.extra is not second.extra


def test_the_signature_is_the_dataclass_one() -> None:
    plain = inspect.signature(PlainExample.__init__)
    fast = inspect.signature(FastExample.__init__)
    assert [(p.name, p.kind) for p in plain.parameters.values()] == [
        (p.name, p.kind) for p in fast.parameters.values()
    ]
    with pytest.raises(TypeError):
        FastExample("a", 1, (), [], 1.0, "positional label")
    with pytest.raises(TypeError):
        FastExample()


def test_still_frozen_hashable_picklable_and_replaceable() -> None:
    instance = FastExample("a", tags=("t",), extra=[])
    with pytest.raises(dataclasses.FrozenInstanceError):
        instance.count = 4  # type: ignore[misc]
    again = FastExample("a", tags=("t",), extra=[])
    assert instance == again
    assert pickle.loads(pickle.dumps(instance)) == instance
    assert copy.deepcopy(instance) == instance
    changed = dataclasses.replace(instance, count=9)
    assert changed.count == 9 and changed.name == "a" and changed.hidden == 0.5


def test_hot_result_types_use_it() -> None:
    for cls in (Prediction, SiteWork):
        assert cls.__init__.__code__.co_filename == "<string>"
        assert cls.__init__.__qualname__ == f"{cls.__qualname__}.__init__"
    site = SiteWork("global", False, "coalesced", (3,), 1.0, 4.0, 0.125, 1.0)
    assert site.wavefronts_per_request == 1.0 and site.counted_with_assumed == ()
    hash(site)


def test_refuses_what_it_cannot_reproduce() -> None:
    @dataclass
    class Mutable:
        value: int

    with pytest.raises(TypeError, match="frozen"):
        fast_init(Mutable)

    @dataclass(frozen=True)
    class WithPostInit:
        value: int

        def __post_init__(self) -> None:
            pass

    with pytest.raises(TypeError, match="__post_init__"):
        fast_init(WithPostInit)

    @dataclass(frozen=True, slots=True)
    class Slotted:
        value: int

    with pytest.raises(TypeError, match="__dict__"):
        fast_init(Slotted)

    @dataclass(frozen=True)
    class WithInitVar:
        value: int
        scale: InitVar[int] = 1

    with pytest.raises(TypeError, match="parameters"):
        fast_init(WithInitVar)
