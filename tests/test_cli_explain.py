"""``analysim explain RESULT_DIR JOB [--at TIME]``, end to end: a run saved with ``--out``,
then what happened to a job and why it waited, with readable times."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysim.faces.cli import main
from analysim.results.readable import moment, parse_moment

# one node of 4 GPUs; 'a' (low priority, 3 days) is evicted by 'b' (high priority, 1 h) an
# hour in, and resumes when 'b' ends
JOBS = "job_id,submit_time,num_gpus,duration,priority\na,0,4,259200,5\nb,3600,4,3600,0\n"
NODES = "node,rack,gpus\nn0,r0,4\n"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("explain")
    (folder / "jobs.csv").write_text(JOBS)
    (folder / "nodes.csv").write_text(NODES)
    out = folder / "result"
    argv = ["run", "--jobs", str(folder / "jobs.csv"), "--nodes", str(folder / "nodes.csv")]
    argv += ["--scheduler", "priority", "--preemption", "--checkpoint-cost", "0"]
    assert main([*argv, "--out", str(out), "--quiet", "--no-progress"]) == 0
    return out


def _explain(capsys, *argv: str) -> str:
    assert main(["explain", *argv]) == 0
    return capsys.readouterr().out


def test_the_story_of_a_preempted_job(saved, capsys):
    out = _explain(capsys, str(saved), "a")
    lines = out.splitlines()
    assert lines[0] == (
        "a (VC default, 4 GPUs): submitted at t=0 s, finished at t=3 d 01:00:00; JCT 262,800 s "
        "(3.0 days), queueing 3,600 s (60.0 min), 1 preemption(s)."
    )
    events = [" ".join(line.split()) for line in lines[2:7]]
    assert events == [
        "t=0 s submit",
        "t=0 s start on n0",
        "t=01:00:00 preempt on n0 (by b)",
        "t=02:00:00 resume on n0",
        "t=3 d 01:00:00 finish on n0",
    ]
    assert "Why it waited:" in lines
    why = lines[lines.index("Why it waited:") + 1].strip()
    assert why.startswith(
        "a at t=01:00:00: it was preempted by b at t=01:00:00. It waits because the cluster is "
        "full: 4 of its 4 GPUs are in use, 0 free, and it needs 4."
    )
    assert "e+" not in out


def test_a_job_that_never_waited_has_no_reasons(saved, capsys):
    out = _explain(capsys, str(saved), "b")
    assert out.splitlines()[0].startswith("b (VC default, 4 GPUs): submitted at t=01:00:00")
    assert "Why it waited:" not in out


@pytest.mark.parametrize("at", ["5400", "1.5 h", "90 min", "01:30:00", "t=01:30:00"])
def test_at_a_moment_in_any_form(saved, capsys, at):
    out = _explain(capsys, str(saved), "a", "--at", at)
    assert out.startswith("a at t=01:30:00: it was preempted by b at t=01:00:00. It waits because")


def test_at_a_moment_it_is_not_waiting(saved, capsys):
    out = _explain(capsys, str(saved), "a", "--at", "2 d")
    assert out.strip() == "a at t=2 d 00:00:00: not waiting: it is running on n0."


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{saved}", "zz"], "explain: no job 'zz' in this result (2 jobs, e.g. 'a', 'b')"),
        (
            ["{saved}", "a", "--at", "soon"],
            "--at: 'soon' is not a time; give seconds (1215112), an amount with a unit (2.3 h, "
            "45 min, 14 d) or a clock (14 d 01:31:52)",
        ),
        (["{saved}", "a", "--at", "-5"], "--at must be in [0, 3.15576e+09], got -5.0"),
        (
            ["{saved}/nowhere", "a"],
            "{saved}/nowhere: not a saved result (no result.json); save one with "
            "'analysim run ... --out DIR'",
        ),
    ],
)
def test_bad_arguments_are_named(saved, capsys, argv, message):
    assert main(["explain", *(a.format(saved=saved) for a in argv)]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == f"analysim: error: {message.format(saved=saved)}"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "t=0 s"),
        (420.5, "t=420.5 s"),
        (3_599, "t=3599 s"),
        (3_600, "t=01:00:00"),
        (1_215_112, "t=14 d 01:31:52"),
        (1_215_112.25, "t=14 d 01:31:52.25"),
        (1_215_112.9999, "t=14 d 01:31:53"),
    ],
)
def test_moments_read_as_clocks_and_back(seconds, text):
    assert moment(seconds) == text
    assert parse_moment(text) == pytest.approx(round(seconds, 3))


# -- why a job never runs -----------------------------------------------------------------------
def test_a_job_that_never_runs_is_told_the_true_reason():
    import pandas as pd

    import analysim as asim
    from analysim.results.explain import why_waiting

    nodes = pd.DataFrame(
        {
            "node": ["n0", "n1", "p0"],
            "rack": ["r0"] * 3,
            "gpus": [4, 4, 8],
            "gpu_type": ["V100", "P100", "A100"],
            "vc": ["a", "a", None],
        }
    )
    cluster = asim.Cluster.from_frame(nodes, quotas={"q": 4})
    jobs = pd.DataFrame(
        {
            "job_id": ["t4", "v100x8", "x16", "q6", "q9"],
            "vc": ["a", "a", "a", "q", "q"],
            "user": "u",
            "submit_time": 0,
            "duration": 10,
            "num_gpus": [1, 8, 16, 6, 9],
            "gpu_type": ["T4", "V100", None, None, None],
        }
    )
    result = asim.simulate(asim.Workload.from_frame(jobs), cluster)
    said = {job: why_waiting(result, job, 5).split(": it never runs: ")[1] for job in jobs.job_id}
    assert said == {
        "t4": "it asks for GPU type T4, which none of the nodes VC a may use have (they have "
        "P100, V100).",
        "v100x8": "it asks for 8 GPUs of type V100; the nodes VC a may use have only 4 of that "
        "type.",
        "x16": "it asks for 16 GPUs; the nodes VC a may use have 8 in all.",
        "q6": "it asks for 6 GPUs, more than VC q's quota of 4 (the shared pool has 8).",
        "q9": "it asks for 9 GPUs, more than VC q's quota of 4 (the shared pool has 8).",
    }


def test_the_story_of_a_shared_gpu_job_names_its_share_cpu_and_memory():
    import pandas as pd

    import analysim as asim
    from analysim.results.explain import job_story

    jobs = pd.DataFrame(
        {
            "job_id": ["big", "half"],
            "vc": "v",
            "user": "u",
            "submit_time": [0, 10],
            "duration": [7_200, 60],
            "num_gpus": [1, 1],
            "gpu_milli": [1000, 500],
            "cpu_milli": [2000, 4000],
            "memory_mib": [1024, 2048],
        }
    )
    nodes = pd.DataFrame(
        {"node": ["n0"], "rack": ["r"], "gpus": [1], "cpu_milli": [8000], "memory_mib": [8192]}
    )
    result = asim.simulate(asim.Workload.from_frame(jobs), asim.Cluster.from_frame(nodes))
    story = job_story(result, "half").splitlines()
    assert story[0] == (
        "half (VC v, 500 milli of a GPU, 4,000 CPU milli, 2,048 MiB): submitted at t=10 s, "
        "finished at t=02:01:00; JCT 7,250 s (2.0 h), queueing 7,190 s (119.8 min), 0 "
        "preemption(s)."
    )
    assert story[story.index("Why it waited:") + 1].startswith("  half at t=10 s: it waits")
