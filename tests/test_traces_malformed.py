"""A corpus of malformed trace files: each raises a TraceError with this exact message.

Messages name the file, the line (or job), the column, what was expected and what was found;
none is a raw pandas, pyarrow or json error. The temporary folder is written ``TMP`` below.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trace_samples import (
    HELIOS_HEADER,
    HELIOS_ROWS,
    OPENB_NODES,
    OPENB_PODS,
    PHILLY_JOBS,
    helios_folder,
    openb_files,
    pai_folder,
    philly_folder,
    write,
)

from analysim.traces import (
    TraceError,
    read_csv_trace,
    read_helios,
    read_helios_cluster,
    read_openb,
    read_pai,
    read_philly,
)

LOG = HELIOS_HEADER + "\n" + "\n".join(HELIOS_ROWS) + "\n"


def helios(log=None, vcs=None, **kwargs):
    return lambda tmp: read_helios(helios_folder(tmp, log, vcs), **kwargs)


def philly(jobs=None, machines=None):
    return lambda tmp: read_philly(philly_folder(tmp, jobs, machines))


def pai(jobs=None, tasks=None, machines=None):
    return lambda tmp: read_pai(pai_folder(tmp, jobs, tasks, machines))


def openb(pods=None, nodes=None):
    return lambda tmp: read_openb(*openb_files(tmp, pods, nodes))


def missing_helios_log(tmp: Path):
    folder = helios_folder(tmp)
    (folder / "cluster_log.csv").unlink()
    return read_helios(folder)


def missing_pai_tasks(tmp: Path):
    folder = pai_folder(tmp)
    (folder / "pai_task_table.csv").unlink()
    return read_pai(folder)


def generic(text: str | bytes, name: str = "jobs.csv", **kwargs):
    return lambda tmp: read_csv_trace(write(tmp / name, text), **kwargs)


def job(**changes):
    return [dict(PHILLY_JOBS[0], **changes)]


CORPUS = {
    # -- Helios job log ----------------------------------------------------------------------
    "helios log missing": (
        missing_helios_log,
        "cluster_log.csv: missing in TMP/Venus (the Helios job log cluster_log.csv); "
        "expected one of cluster_log.csv (file: TMP/Venus/cluster_log.csv)",
    ),
    "helios log empty": (
        helios(log=""),
        "cluster_log.csv: the file is empty; expected the Helios job log cluster_log.csv "
        "(file: TMP/Venus/cluster_log.csv)",
    ),
    "helios header only": (
        helios(log=HELIOS_HEADER + "\n"),
        "cluster_log.csv: no data rows after the header; expected at least one row "
        "(file: TMP/Venus/cluster_log.csv)",
    ),
    "helios column missing": (
        helios(log=LOG.replace(",duration,queue", ",queue").replace(",3600,0", ",0")),
        "cluster_log.csv, line 1: missing column(s) 'duration'; expected a header with "
        "job_id, user, vc, gpu_num, submit_time, duration, found job_id, user, vc, "
        "gpu_num, cpu_num, node_num, state, submit_time, start_time, end_time, queue "
        "(file: TMP/Venus/cluster_log.csv)",
    ),
    "helios column misnamed": (
        helios(log=LOG.replace("submit_time", "submittime")),
        "cluster_log.csv, line 1: missing column(s) 'submit_time' (is 'submittime' "
        "meant?); expected a header with job_id, user, vc, gpu_num, submit_time, "
        "duration, found job_id, user, vc, gpu_num, cpu_num, node_num, state, "
        "submittime, start_time, end_time, duration, queue (file: "
        "TMP/Venus/cluster_log.csv)",
    ),
    "helios semicolons": (
        helios(log=LOG.replace(",", ";")),
        "cluster_log.csv, line 1: the fields are separated by ';'; expected "
        "comma-separated values, found "
        "job_id;user;vc;gpu_num;cpu_num;node_num;state;submit_time;start_time;end_time;du "
        "(file: TMP/Venus/cluster_log.csv)",
    ),
    "helios tabs": (
        helios(log=LOG.replace(",", "\t")),
        "cluster_log.csv, line 1: the fields are separated by a tab; expected "
        "comma-separated values, found "
        "job_id\tuser\tvc\tgpu_num\tcpu_num\tnode_num\tstate\t"
        "submit_time\tstart_time\tend_time\tdu "
        "(file: TMP/Venus/cluster_log.csv)",
    ),
    "helios truncated last line": (
        helios(log=LOG.rstrip("\n")[:-40]),
        "cluster_log.csv, line 8: 9 field(s) instead of 12 (the file seems truncated); "
        "expected 12 comma-separated fields: job_id, user, vc, gpu_num, cpu_num, "
        "node_num, state, submit_time, start_time, end_time, duration, queue, found "
        "107,uB,vcZ,1,4,1,TIMEOUT,2020-09-02 11:00:00,2020-0 (file: "
        "TMP/Venus/cluster_log.csv)",
    ),
    "helios extra field mid-file": (
        helios(log=LOG.replace("102,uB,vcA,0", "102,uB,vcA,0,0")),
        "cluster_log.csv, line 3: 13 field(s) instead of 12; expected 12 "
        "comma-separated fields: job_id, user, vc, gpu_num, cpu_num, node_num, state, "
        "submit_time, start_time, end_time, duration, queue, found "
        "102,uB,vcA,0,0,4,1,COMPLETED,2020-09-01 00:00:20,2020-09-01 "
        "00:00:20,2020-09-01 00:10:20,600,0 (file: TMP/Venus/cluster_log.csv)",
    ),
    "helios non-UTF-8 byte": (
        helios(log=LOG.encode().replace(b"103,uA", b"103,u\xe9A")),
        "cluster_log.csv, line 4, column 'user': byte 0xe9 is not UTF-8; expected "
        "UTF-8 text, found 103,u\\xe9A,vcB,8,32,1,FAILED,2020-09-01 00:01:00... (file: "
        "TMP/Venus/cluster_log.csv)",
    ),
    "helios times in another format": (
        helios(log=LOG.replace("2020-09-01 ", "01/09/2020 ").replace("2020-09-02 ", "02/09/2020 ")),
        "cluster_log.csv, line 2, column 'submit_time': no value of this time column "
        "parses; expected times like 2020-09-01 08:30:00 (format '%Y-%m-%d %H:%M:%S'), "
        "found 01/09/2020 00:00:10 (file: TMP/Venus/cluster_log.csv)",
    ),
    "helios folder missing": (
        lambda tmp: read_helios(tmp / "Nowhere"),
        "Nowhere: no such folder; expected a folder holding the Helios job log "
        "cluster_log.csv (file: TMP/Nowhere)",
    ),
    # -- Helios VC file ----------------------------------------------------------------------
    "helios vcs not adding up": (
        helios(vcs="date,vcA,vcB,vcC,total\n2020-09-01,16,8,0,32\n"),
        "cluster_gpu_number.csv, line 2, column 'total': the VCs do not add up to the "
        "total; expected 24 (the sum of the VC columns), found 32 (file: "
        "TMP/Venus/cluster_gpu_number.csv)",
    ),
    "helios vcs bad count": (
        helios(vcs="date,vcA,vcB,vcC,total\n2020-09-01,16,eight,0,24\n"),
        "cluster_gpu_number.csv, line 2, column 'vcB': not a GPU count; expected a "
        "whole number of GPUs from 0 to 10,000,000, found eight (file: "
        "TMP/Venus/cluster_gpu_number.csv)",
    ),
    "helios vcs bad date": (
        helios(vcs="date,vcA,vcB,vcC,total\n09/01/2020,16,8,0,24\n"),
        "cluster_gpu_number.csv, line 2, column 'date': no value of this time column "
        "parses; expected times like 2020-09-01 (format '%Y-%m-%d'), found 09/01/2020 "
        "(file: TMP/Venus/cluster_gpu_number.csv)",
    ),
    "helios vc_date not in file": (
        helios(vc_date="2021-01-01"),
        "cluster_gpu_number.csv, column 'date': no row for vc_date 2021-01-01; "
        "expected a day from 2020-09-01 to 2020-09-02 (file: "
        "TMP/Venus/cluster_gpu_number.csv)",
    ),
    "helios vcs without date column": (
        lambda tmp: read_helios_cluster(write(tmp / "gpus.csv", "day,vcA,total\n1,8,8\n")),
        "gpus.csv, line 1: missing column(s) 'date'; expected a header with date, "
        "found day, vcA, total (file: TMP/gpus.csv)",
    ),
    # -- Philly ------------------------------------------------------------------------------
    "philly JSON syntax": (
        philly(jobs=json.dumps(PHILLY_JOBS)[:-30]),
        "cluster_job_log, line 1: not valid JSON (Unterminated string starting at, "
        "column 1142); expected a JSON list of jobs (file: "
        "TMP/trace-data/cluster_job_log)",
    ),
    "philly JSON not a list": (
        philly(jobs=json.dumps({"jobs": PHILLY_JOBS})),
        "cluster_job_log: the top level is not a list; expected a JSON list of jobs, "
        "found an object (file: TMP/trace-data/cluster_job_log)",
    ),
    "philly JSON empty list": (
        philly(jobs="[]"),
        "cluster_job_log: the list of jobs is empty; expected at least one job (file: "
        "TMP/trace-data/cluster_job_log)",
    ),
    "philly job not an object": (
        philly(jobs=["application_1"]),
        "cluster_job_log, job 0: not a job object; expected a JSON object, found a "
        "string (file: TMP/trace-data/cluster_job_log)",
    ),
    "philly job missing key": (
        philly(jobs=[{k: v for k, v in PHILLY_JOBS[0].items() if k != "attempts"}]),
        "cluster_job_log, job 0, column 'attempts': missing key; expected keys jobid, "
        "vc, user, status, submitted_time, attempts, found status, vc, jobid, "
        "submitted_time, user (file: TMP/trace-data/cluster_job_log)",
    ),
    "philly attempts not a list": (
        philly(jobs=job(attempts="none")),
        "cluster_job_log, job 0, column 'attempts': attempts is not a list; expected a "
        "list of attempts, found a string (file: TMP/trace-data/cluster_job_log)",
    ),
    "philly detail without gpus": (
        philly(
            jobs=job(attempts=[{"start_time": None, "end_time": None, "detail": [{"ip": "m1"}]}])
        ),
        "cluster_job_log, job 0 attempt 0 detail 0, column 'gpus': no list of GPUs; "
        'expected {"ip": ..., "gpus": [...]}, found an object (file: '
        "TMP/trace-data/cluster_job_log)",
    ),
    "philly non-UTF-8 byte": (
        philly(jobs=json.dumps(PHILLY_JOBS).encode().replace(b"vc2", b"vc\xff", 1)),
        "cluster_job_log, line 1: byte 0xff is not UTF-8; expected UTF-8 text, found "
        '...": "u1"}, {"status": "Killed", "vc": "vc\\xff", "jobid": "application_2", '
        '"attempts"... (file: TMP/trace-data/cluster_job_log)',
    ),
    "philly times in another format": (
        philly(jobs=[dict(j, submitted_time="07/10/2017 01:11") for j in PHILLY_JOBS]),
        "cluster_job_log, job 0, column 'submitted_time': no value of this time column "
        "parses; expected times like 2020-09-01 08:30:00 (format '%Y-%m-%d %H:%M:%S'), "
        "found 07/10/2017 01:11 (file: TMP/trace-data/cluster_job_log)",
    ),
    "philly machine list semicolons": (
        philly(machines="machineId;number of GPUs;single GPU mem\nm1;8;24GB\n"),
        "cluster_machine_list, line 1: the fields are separated by ';'; expected "
        "comma-separated values, found machineId;number of GPUs;single GPU mem "
        "(file: TMP/trace-data/cluster_machine_list)",
    ),
    # -- PAI ---------------------------------------------------------------------------------
    "pai job table short line": (
        pai(jobs="j1,i1,u1,Terminated,1000.0\n"),
        "pai_job_table.csv, line 1: 5 field(s) on the first line; expected 6 "
        "header-less fields: job_name, inst_id, user, status, start_time, end_time, "
        "found j1,i1,u1,Terminated,1000.0 (file: TMP/pai/pai_job_table.csv)",
    ),
    "pai task table truncated": (
        pai(tasks="j1,worker,2.0,Terminated,1010.0,4000.0,600.0,29.3,50.0,T4\nj1,ps,1.0,Term"),
        "pai_task_table.csv, line 2: 4 field(s) instead of 10 (the file seems "
        "truncated); expected 10 comma-separated fields: job_name, task_name, "
        "inst_num, status, start_time, end_time, plan_cpu, plan_mem, plan_gpu, "
        "gpu_type, found j1,ps,1.0,Term (file: TMP/pai/pai_task_table.csv)",
    ),
    "pai task table missing": (
        missing_pai_tasks,
        "pai_task_table.csv: missing in TMP/pai (the PAI table pai_task_table); "
        "expected one of pai_task_table.csv, pai_task_table (file: "
        "TMP/pai/pai_task_table.csv)",
    ),
    "pai machine spec tabs": (
        pai(machines="m1\tT4\t96\t512\t2\n"),
        "pai_machine_spec.csv, line 1: the fields are separated by a tab; expected "
        "comma-separated values, found m1\tT4\t96\t512\t2 (file: TMP/pai/pai_machine_spec.csv)",
    ),
    # -- openb -------------------------------------------------------------------------------
    "openb pods without gpu_milli": (
        openb(pods=OPENB_PODS.replace("gpu_milli", "gpu_mili")),
        "openb_pod_list.csv, line 1: missing column(s) 'gpu_milli' (is 'gpu_mili' "
        "meant?); expected a header with name, num_gpu, gpu_milli, pod_phase, "
        "creation_time, deletion_time, scheduled_time, found name, cpu_milli, "
        "memory_mib, num_gpu, gpu_mili, gpu_spec, qos, pod_phase, creation_time, "
        "deletion_time, scheduled_time (file: TMP/openb_pod_list.csv)",
    ),
    "openb nodes semicolons": (
        openb(nodes=OPENB_NODES.replace(",", ";")),
        "openb_node_list.csv, line 1: the fields are separated by ';'; expected "
        "comma-separated values, found sn;cpu_milli;memory_mib;gpu;model (file: "
        "TMP/openb_node_list.csv)",
    ),
    "openb pods non-UTF-8": (
        openb(pods=OPENB_PODS.encode().replace(b"openb-pod-0003", b"openb-pod-\x800003")),
        "openb_pod_list.csv, line 5, column 'name': byte 0x80 is not UTF-8; expected "
        "UTF-8 text, found openb-pod-\\x800003,8000,8192,2,1000,V100M16|V100M32,L... "
        "(file: TMP/openb_pod_list.csv)",
    ),
    "openb nodes all CPU": (
        openb(nodes="sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,0,\n"),
        "openb_node_list.csv: no GPU node in the node list:\n"
        "nodes (openb_node_list.csv): 1 read, 0 kept, 1 dropped\n"
        "  dropped cpu_only                        1  asks for (or, for a machine, has) "
        "no GPU\n"
        "      e.g. line 2 (sn='n0'): gpu=0 (file: TMP/openb_node_list.csv)",
    ),
    # -- any CSV / parquet -------------------------------------------------------------------
    "generic parquet garbage": (
        generic(b"PAR1 not really", name="jobs.parquet"),
        "jobs.parquet: not a readable parquet file (Could not open Parquet input "
        "source 'TMP/jobs.parquet': Parquet magic bytes not found in footer. Either "
        "the file is corrupted or this is not a parquet file.) (file: TMP/jobs.parquet)",
    ),
    "generic mapped column absent": (
        generic("id,t,gpus,runtime\nj1,0,1,10\n", columns={"job_id": "id", "submit_time": "t"}),
        "jobs.csv, line 1: missing column(s) 'num_gpus' (is 'gpus' meant?); expected a "
        "header with id, t, num_gpus, found id, t, gpus, runtime (file: TMP/jobs.csv)",
    ),
}


@pytest.mark.parametrize("case", list(CORPUS))
def test_a_malformed_file_raises_a_trace_error_with_this_message(case, tmp_path):
    read, expected = CORPUS[case]
    with pytest.raises(TraceError) as info:
        read(tmp_path)
    message = str(info.value).replace(str(tmp_path), "TMP")
    assert message == expected


def test_the_corpus_holds_at_least_25_files_across_the_formats():
    formats = {case.split()[0] for case in CORPUS}
    assert len(CORPUS) >= 25
    assert formats == {"helios", "philly", "pai", "openb", "generic"}


def test_a_trace_error_is_a_value_error_with_the_parts_as_attributes(tmp_path):
    with pytest.raises(ValueError) as info:
        read_helios(helios_folder(tmp_path, log=LOG.encode().replace(b"103,uA", b"103,u\xe9A")))
    error = info.value
    assert isinstance(error, TraceError)
    assert (error.line, error.column, error.expected) == (4, "user", "UTF-8 text")
    assert error.path.endswith("cluster_log.csv")


def test_an_unknown_column_in_the_mapping_is_an_argument_error(tmp_path):
    path = write(tmp_path / "jobs.csv", "id,t,gpus,duration\nj1,0,1,10\n")
    with pytest.raises(ValueError, match=r"unknown AnalySIM column\(s\) \['runtime'\]"):
        read_csv_trace(path, columns={"runtime": "duration"})
