"""manage.py build_pool --known-pairs FILE attaches training and gold pairs from the command line, as
the build form does (issue 39: the campaign guide set a gold rate on the command line, where no
gold pair could be attached); a bad file names file, line and field, and no pool is made."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Pool, PooledPair
from tests.factories import make_pool_with_runs

pytestmark = pytest.mark.django_db

KNOWN = ("caption,clip,answer,role,explanation\n"
         "q1,v1,relevant,training,the clip shows it\n"
         "q2,v1,not_relevant,training,no dog in the clip\n"
         "q3,v2,relevant,gold,\n"
         "q4,v3,not_relevant,,\n")  # role left empty: gold


def build(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("build_pool", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def known_of(pool) -> set:
    return set(PooledPair.objects.filter(pool=pool, role__in=["training", "gold"]).values_list(
        "role", "caption__external_id", "clip__external_id", "known_answer", "explanation"))


EXPECTED = {("training", "q1", "v1", "relevant", "the clip shows it"),
            ("training", "q2", "v1", "not_relevant", "no dog in the clip"),
            ("gold", "q3", "v2", "relevant", ""), ("gold", "q4", "v3", "not_relevant", "")}


def test_known_pairs_from_a_file_are_attached_to_the_new_pool(tmp_path):
    reference, _ = make_pool_with_runs(depth=3)
    path = tmp_path / "known.csv"
    path.write_text(KNOWN)
    out, err = build("--dataset", reference.dataset.name, "--name", "cli", "--run", "A", "--depth", "3",
                     "--gold-rate", "0.1", "--known-pairs", str(path))
    pool = Pool.objects.get(dataset=reference.dataset, name="cli")
    assert known_of(pool) == EXPECTED
    assert "known pairs: 2 training and 2 gold listed, 4 new to the pool" in out
    assert err == ""  # a gold rate with gold pairs: nothing to warn of


def test_a_bad_file_names_file_line_and_field_and_makes_no_pool(tmp_path):
    reference, _ = make_pool_with_runs(depth=3)
    path = tmp_path / "bad.csv"
    path.write_text("caption,clip,answer,role\nq1,v1,relevant,training\nq9,v1,yes,gold\nq2,v99,relevant,trainer\n")
    with pytest.raises(CommandError) as refused:
        build("--dataset", reference.dataset.name, "--name", "cli", "--run", "A", "--known-pairs", str(path))
    message = str(refused.value)
    assert message.startswith("import refused, nothing was written:")
    for expected in (f"{path}, line 3, field 'caption'", f"{path}, line 3, field 'answer'",
                     f"{path}, line 4, field 'clip'", f"{path}, line 4, field 'role'"):
        assert expected in message
    assert not Pool.objects.filter(name="cli").exists()


def test_a_missing_file_is_named_and_makes_no_pool(tmp_path):
    reference, _ = make_pool_with_runs(depth=3)
    missing = tmp_path / "nowhere.csv"
    with pytest.raises(CommandError, match=f"{missing}: cannot read the known-pairs file"):
        build("--dataset", reference.dataset.name, "--name", "cli", "--run", "A", "--known-pairs", str(missing))
    assert not Pool.objects.filter(name="cli").exists()


def test_known_pairs_are_copied_from_another_pool_or_added_to_an_existing_one(tmp_path):
    reference, _ = make_pool_with_runs(depth=3)
    dataset = reference.dataset
    path = tmp_path / "known.csv"
    path.write_text(KNOWN)
    build("--dataset", dataset.name, "--name", "first", "--run", "A", "--known-pairs", str(path))
    first = Pool.objects.get(dataset=dataset, name="first")
    build("--dataset", dataset.name, "--name", "second", "--run", "A", "--known-pairs-from", str(first.pk))
    assert known_of(Pool.objects.get(dataset=dataset, name="second")) == EXPECTED
    # --add with a file: the runs and the known pairs join the existing pool, listed pairs it has are kept once
    path.write_text(KNOWN + "q1,v2,relevant,gold,\n")
    out, _ = build("--dataset", dataset.name, "--name", "first", "--add", "--run", "B", "--known-pairs", str(path))
    assert known_of(first) == EXPECTED | {("gold", "q1", "v2", "relevant", "")}
    assert "known pairs: 2 training and 3 gold listed, 1 new to the pool" in out
    with pytest.raises(CommandError, match="--known-pairs and --known-pairs-from: give one of them"):
        build("--dataset", dataset.name, "--name", "third", "--run", "A", "--known-pairs", str(path),
              "--known-pairs-from", str(first.pk))


def test_settings_that_cannot_act_are_warned_of_after_the_build():
    reference, _ = make_pool_with_runs(depth=3)
    out, err = build("--dataset", reference.dataset.name, "--name", "cli", "--run", "A", "--gold-rate", "0.05")
    assert "pool 'cli'" in out
    assert err == ("warning: gold rate 0.05, but the pool has no gold pairs: none is shown; attach some "
                   "(build_pool --known-pairs, or Gold and training pairs on the pool page)\n")


def test_clips_that_failed_the_media_check_refuse_the_build_unless_left_out():
    from django.utils import timezone

    from annotation.models import Clip, ClipMediaCheck

    reference, _ = make_pool_with_runs(depth=3)
    dataset = reference.dataset
    broken = Clip.objects.get(dataset=dataset, external_id="v2")
    ClipMediaCheck.objects.create(clip=broken, playable=False, problems=[{"code": "missing"}], checked_at=timezone.now())
    with pytest.raises(CommandError, match=r"1 clips of '.*' failed the media check \(v2\)"):
        build("--dataset", dataset.name, "--name", "cli", "--run", "A", "--depth", "3")
    assert not Pool.objects.filter(name="cli").exists()
    out, _ = build("--dataset", dataset.name, "--name", "cli", "--run", "A", "--depth", "3", "--skip-unplayable")
    assert "left out 1 clip that failed the media check: v2" in out
    pool = Pool.objects.get(dataset=dataset, name="cli")
    assert not PooledPair.objects.filter(pool=pool, clip=broken).exists()
    assert PooledPair.objects.filter(pool=pool).exists()
