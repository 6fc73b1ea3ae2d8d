"""The error hierarchy: one base class, structured fields, messages naming the op."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import tenferro as tfr

FAMILIES = [
    tfr.ValidationError,
    tfr.RuntimeStateError,
    tfr.HostAccessError,
    tfr.GroupError,
    tfr.AccessError,
    tfr.RootImportError,
    tfr.DeviceAccessError,
    tfr.BorrowError,
    tfr.MovedTensorError,
    tfr.ReinterpretError,
    tfr.CopyForbiddenError,
]


@pytest.mark.parametrize("cls", FAMILIES, ids=lambda c: c.__name__)
def test_every_family_derives_from_the_base_class(cls: type[tfr.TenferroError]) -> None:
    assert issubclass(cls, tfr.TenferroError)


@pytest.mark.parametrize("cls", FAMILIES, ids=lambda c: c.__name__)
def test_every_family_has_an_upper_case_default_kind(cls: type[tfr.TenferroError]) -> None:
    err = cls("Op.x", "message")
    assert err.kind == cls.default_kind
    assert err.kind.isupper()


def test_validation_error_is_a_value_error() -> None:
    assert issubclass(tfr.ValidationError, ValueError)


def test_runtime_state_error_is_a_runtime_error() -> None:
    assert issubclass(tfr.RuntimeStateError, RuntimeError)


def test_message_starts_with_the_operation() -> None:
    err = tfr.HostAccessError("Tensor.host_data", "download explicitly first")
    assert str(err) == "Tensor.host_data: download explicitly first"


def test_fields_are_reachable_as_attributes() -> None:
    err = tfr.ValidationError("Op.x", "bad", kind="LENGTH_MISMATCH", expected=4, actual=3)
    assert (err.op, err.kind, err.message) == ("Op.x", "LENGTH_MISMATCH", "bad")
    assert (err.expected, err.actual) == (4, 3)
    assert err.details == {"expected": 4, "actual": 3}


def test_a_missing_field_is_an_attribute_error() -> None:
    err = tfr.ValidationError("Op.x", "bad")
    with pytest.raises(AttributeError):
        _ = err.nonexistent


@pytest.mark.parametrize("cls", FAMILIES, ids=lambda c: c.__name__)
def test_errors_survive_pickling_with_their_fields(cls: type[tfr.TenferroError]) -> None:
    err = cls("Op.x", "bad", kind="SOME_KIND", value=7)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert (back.op, back.kind, back.message, back.value) == ("Op.x", "SOME_KIND", "bad", 7)


def test_errors_can_be_copied() -> None:
    err = tfr.GroupError("Group.take", "vacant", kind="DESCRIPTOR_SLOT_VACANT", slot=0)
    assert copy.copy(err).slot == 0


def test_a_real_length_error_carries_the_values_involved() -> None:
    with pytest.raises(tfr.ValidationError) as err:
        tfr.Tensor.from_vec_col_major((2, 2), np.zeros(3))
    e = err.value
    assert (e.op, e.kind, e.shape, e.expected, e.actual) == (
        "Tensor.from_vec_col_major",
        "LENGTH_MISMATCH",
        (2, 2),
        4,
        3,
    )
