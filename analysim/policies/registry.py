"""A small registry per policy kind: choose a policy by name, by ``{"name": ..., **params}``
or by passing an instance."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

T = TypeVar("T")


class Policy:
    """What every policy shares: a registered ``name`` and a plain-data ``spec``.

    A policy's public attributes are its parameters: ``spec()`` returns them with the name,
    in the ``{"name": ..., **params}`` form the registry builds policies from.
    """

    name: ClassVar[str] = "policy"

    def spec(self) -> dict[str, Any]:
        params = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        return {"name": self.name, **params}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.spec().items() if k != "name")
        return f"{type(self).__name__}({params})"


class Registry(Generic[T]):
    """Maps names to policy classes of one kind (scheduler, placer, cost model)."""

    def __init__(self, kind: str, base: type[T]) -> None:
        self.kind = kind
        self.base = base
        self._classes: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        """Class decorator: make ``cls`` available as ``name``."""

        def add(cls: type[T]) -> type[T]:
            cls.name = name  # type: ignore[attr-defined]
            self._classes[name] = cls
            return cls

        return add

    @property
    def names(self) -> list[str]:
        return sorted(self._classes)

    def make(self, spec: Any) -> T:
        """Build a policy from a name, a ``{"name": ..., **params}`` dict, or an instance.

        An instance is copied (``copy.deepcopy``), as scikit-learn clones an estimator: a
        policy may keep state for the simulation it serves (``Scheduler.bind``), so every
        simulation built from one config gets a policy of its own."""
        if isinstance(spec, self.base):
            return copy.deepcopy(spec)
        params: dict[str, Any] = {}
        if isinstance(spec, Mapping):
            params = dict(spec)
            spec = params.pop("name", None)
        if not isinstance(spec, str):
            raise ValueError(
                f"{self.kind}: expected a name, a dict with 'name', or a {self.base.__name__} "
                f"instance, got {spec!r}"
            )
        if spec not in self._classes:
            raise ValueError(f"unknown {self.kind} {spec!r}; choose one of {self.names}")
        try:
            return self._classes[spec](**params)
        except TypeError as exc:
            raise ValueError(f"{self.kind} {spec!r}: bad parameters {params} ({exc})") from None


def spec_of(policy: Any) -> Any:
    """The JSON-serialisable spec of a policy instance (``{"name": ..., **params}``)."""
    to_spec = getattr(policy, "spec", None)
    return to_spec() if callable(to_spec) else policy
