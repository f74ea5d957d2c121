"""The report registry: every kind declared once, in its own module, and reports created in one place."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from annotation.analysis.sample_eval import TRECVID_MAX_RESULT_SIZE
from annotation.models import Report
from annotation.services.evaluation.conventions import CONVENTIONS
from annotation.services.reports import kinds
from annotation.services.reports.create import ReportError, report_params_clean
from annotation.services.reports.kind import Param, ReportKind, kind_params_clean
from annotation.services.reports.kinds.infap import KIND as INFAP_KIND, infap_report_create
from annotation.services.reports.registry import POOL_REPORT_KINDS, REPORT_KINDS, kind_title, report_tables
from api.views.moments import InfapApi

ANNOTATION = Path(__file__).resolve().parents[4] / "annotation"
KINDS_FOLDER = Path(kinds.__file__).parent


def test_every_kind_module_is_registered_under_its_own_name():
    modules = sorted(path.stem for path in KINDS_FOLDER.glob("*.py") if path.stem != "__init__")
    assert sorted(REPORT_KINDS) == modules
    assert len(REPORT_KINDS) == 15
    for name, kind in REPORT_KINDS.items():
        assert isinstance(kind, ReportKind) and kind.name == name


def test_the_pool_report_kinds_are_those_with_a_computation_in_their_old_order():
    assert POOL_REPORT_KINDS == ("agreement", "metrics", "sample_estimate", "judging_estimates", "machine_judge",
                                 "corrected_leaderboard", "ppi_estimates")
    assert all(REPORT_KINDS[name].params and REPORT_KINDS[name].title for name in POOL_REPORT_KINDS)


def test_every_parameter_is_declared_with_a_type_a_default_and_a_description():
    for kind in REPORT_KINDS.values():
        for name, param in kind.params.items():
            assert isinstance(param, Param), (kind.name, name)
            assert param.type in (int, float, list, str), (kind.name, name)
            assert param.description.strip(), (kind.name, name)
            if param.default is None:
                assert param.nullable, f"{kind.name}.{name}: a null default must be declared nullable"


def test_defaults_fill_in_and_a_function_default_reads_the_pool():
    class FakePool:
        depth = 7

    clean = report_params_clean(kind="metrics", params={"ks": [10, 1, 10]}, pool=FakePool())
    assert clean == {"depth": 7, "ks": [1, 10], "decimals": 1, "overlap_k": 10, "rbo_p": 0.9}
    # A judgment set's machine judge has no pool: its runs are ranked at the set depth.
    assert kind_params_clean(kind=REPORT_KINDS["machine_judge"], params={}, pool=None)["depth"] == 10


def test_unknown_kinds_and_parameters_are_refused_with_the_known_ones_named():
    with pytest.raises(ReportError, match="unknown report kind 'infap'; use one of agreement, metrics, sample_estimate, "
                                          "judging_estimates, machine_judge, corrected_leaderboard, ppi_estimates"):
        report_params_clean(kind="infap", params={}, pool=None)
    with pytest.raises(ReportError, match=r"unknown parameter\(s\) depth for agreement reports; known: n_boot, seed, "
                                          r"confidence, with_mace"):
        report_params_clean(kind="agreement", params={"depth": 3}, pool=None)


def test_kind_titles_and_tables_come_from_the_registry():
    assert kind_title("agreement") == "Agreement"
    assert kind_title("judging_simulation") == "Judging simulation"
    assert kind_title("infap") == "infap"  # laid out by the moments pages, named as before
    assert kind_title("not_a_kind") == "not_a_kind"
    assert report_tables(report=Report(kind="infap", result={"runs": []})) == []
    assert report_tables(report=Report(kind="not_a_kind", result={"x": 1})) == []


def _report_rows_created(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("create", "bulk_create")
                and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "objects"
                and isinstance(node.func.value.value, ast.Name) and node.func.value.value.id == "Report"):
            return True
    return False


def test_report_rows_are_created_in_one_place():
    creators = {path.relative_to(ANNOTATION).as_posix() for path in ANNOTATION.rglob("*.py")
                if "migrations" not in path.parts and _report_rows_created(path)}
    assert creators == {"services/reports/store.py"}


def test_nists_max_result_size_has_one_default():
    assert TRECVID_MAX_RESULT_SIZE == 1000
    assert CONVENTIONS["trecvid"].max_result_size == TRECVID_MAX_RESULT_SIZE
    assert inspect.signature(infap_report_create).parameters["max_result_size"].default == TRECVID_MAX_RESULT_SIZE
    # The operation and its endpoint read the kind's one declaration.
    assert INFAP_KIND.params["max_result_size"].default == TRECVID_MAX_RESULT_SIZE
    assert "Default: 1000." in InfapApi.InputSerializer().fields["max_result_size"].help_text
