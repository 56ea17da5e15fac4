"""Small trace files in the documented formats, written into a test's tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

HELIOS_HEADER = (
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
)
HELIOS_ROWS = [
    "101,uA,vcA,1,4,1,COMPLETED,2020-09-01 00:00:10,2020-09-01 00:00:10,2020-09-01 01:00:10,3600,0",
    "102,uB,vcA,0,4,1,COMPLETED,2020-09-01 00:00:20,2020-09-01 00:00:20,2020-09-01 00:10:20,600,0",
    "103,uA,vcB,8,32,1,FAILED,2020-09-01 00:01:00,2020-09-01 00:01:00,2020-09-01 00:01:00,0,0",
    "104,uC,vcB,16,64,2,CANCELLED,2020-09-01 00:02:00,2020-09-01 00:03:00,2020-09-01 "
    "00:13:00,600,60",
    "105,uC,vcC,2,8,1,COMPLETED,2020-09-01 00:03:00,2020-09-01 00:03:00,2020-09-01 00:13:00,600,0",
    "106,uB,vcB,4,16,1,COMPLETED,2020-09-02 10:00:00,2020-09-02 10:00:05,2020-09-02 "
    "12:00:05,7200,5",
    "107,uB,vcZ,1,4,1,TIMEOUT,2020-09-02 11:00:00,2020-09-02 11:00:00,2020-09-02 11:30:00,1800,0",
]
"""Seven Helios jobs: 101 kept, 102 CPU-only, 103 zero duration, 104 larger than vcB (8 GPUs),
105 in vcC (no GPUs on 2020-09-01), 106 kept, 107 in vcZ (not in the VC file)."""

HELIOS_VCS = "date,vcA,vcB,vcC,total\n2020-09-01,16,8,0,24\n2020-09-02,16,8,8,32\n"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def helios_folder(
    tmp_path: Path, log: str | bytes | None = None, vcs: str | bytes | None = None
) -> Path:
    """A Helios cluster folder (``Venus``) with the sample log and VC file, or the given text."""
    folder = tmp_path / "Venus"
    folder.mkdir(parents=True, exist_ok=True)
    if log is None:
        log = HELIOS_HEADER + "\n" + "\n".join(HELIOS_ROWS) + "\n"
    write(folder / "cluster_log.csv", log)
    write(folder / "cluster_gpu_number.csv", HELIOS_VCS if vcs is None else vcs)
    return folder


def philly_job(
    jobid: str,
    vc: str,
    submitted: str | None,
    attempts: list[tuple[str | None, str | None, int]],
    status: str = "Pass",
    user: str = "u1",
) -> dict:
    """A Philly job; each attempt is (start, end, GPUs on one machine)."""
    return {
        "status": status,
        "vc": vc,
        "jobid": jobid,
        "attempts": [
            {
                "start_time": start,
                "end_time": end,
                "detail": [{"ip": "m1", "gpus": [f"gpu{i}" for i in range(gpus)]}],
            }
            for start, end, gpus in attempts
        ],
        "submitted_time": submitted,
        "user": user,
    }


PHILLY_JOBS = [
    philly_job(
        "application_1",
        "vc1",
        "2017-10-07 01:11:39",
        [
            ("2017-10-07 01:12:09", "2017-10-07 01:13:23", 8),
            ("2017-10-07 01:13:30", "2017-10-07 02:13:30", 4),
        ],
    ),
    philly_job("application_2", "vc2", "2017-10-07 01:20:00", [], status="Killed"),
    philly_job("application_3", "vc2", "2017-10-07 01:30:00", [("2017-10-07 01:30:10", None, 4)]),
    philly_job(
        "application_4",
        "vc1",
        "2017-10-07 03:00:00",
        [(None, "2017-10-07 03:10:00", 1), ("2017-10-07 03:20:00", "2017-10-07 03:30:00", 1)],
        status="Failed",
    ),
]
"""application_1: 74 s + 3,600 s on 8 GPUs (first attempt); application_2: never started;
application_3: still running (censored at the trace end, 03:30:00: 7,190 s on 4 GPUs);
application_4: first attempt without a start (skipped), 600 s on 1 GPU."""

PHILLY_MACHINES = "machineId,number of GPUs,single GPU mem\nm1,8, 24GB\nm2,8, 12GB\nm3,0, \n"


def philly_folder(tmp_path: Path, jobs: object = None, machines: str | bytes | None = None) -> Path:
    folder = tmp_path / "trace-data"
    folder.mkdir(parents=True, exist_ok=True)
    text = (
        jobs
        if isinstance(jobs, (str, bytes))
        else json.dumps(PHILLY_JOBS if jobs is None else jobs, indent=1)
    )
    write(folder / "cluster_job_log", text)
    write(folder / "cluster_machine_list", PHILLY_MACHINES if machines is None else machines)
    return folder


PAI_JOBS = (
    "j1,i1,u1,Terminated,1000.0,5000.0\n"
    "j2,i2,u2,Terminated,1100.0,1200.0\n"
    "j3,i3,u1,Running,2000.0,\n"
    "j4,i4,u3,Waiting,2500.0,\n"
    "j5,i5,u2,Terminated,3000.0,3100.0\n"
)
PAI_TASKS = (
    "j1,worker,2.0,Terminated,1010.0,4000.0,600.0,29.3,50.0,T4\n"
    "j1,ps,1.0,Terminated,1005.0,4100.0,600.0,29.3,,\n"
    "j2,tensorflow,1.0,Terminated,1100.0,1200.0,400.0,10.0,,\n"
    "j3,worker,1.0,Running,2100.0,,400.0,10.0,200.0,V100\n"
    "j4,worker,1.0,Waiting,0.0,0.0,400.0,10.0,100.0,\n"
    "j5,worker,1.0,Terminated,3010.0,3100.0,400.0,10.0,1600.0,V100\n"
    "j9,worker,1.0,Terminated,10.0,20.0,400.0,10.0,100.0,T4\n"
)
"""j1: 2 workers of half a GPU (rounded up: 2 GPUs, T4) from 1,005 to 4,100 s; j2: CPU only;
j3: 2 V100 GPUs, still running (censored at 5,000 s, the last time); j4: never started;
j5: 16 V100 GPUs, more than the 8 V100 GPUs there are; j9: a task without a job."""
PAI_MACHINES = "m1,T4,96,512,2\nm2,V100,96,512,8\nm3,CPU,96,512,0\n"


def pai_folder(
    tmp_path: Path,
    jobs: str | bytes | None = None,
    tasks: str | bytes | None = None,
    machines: str | bytes | None = None,
) -> Path:
    folder = tmp_path / "pai"
    write(folder / "pai_job_table.csv", PAI_JOBS if jobs is None else jobs)
    write(folder / "pai_task_table.csv", PAI_TASKS if tasks is None else tasks)
    write(folder / "pai_machine_spec.csv", PAI_MACHINES if machines is None else machines)
    return folder


OPENB_PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "openb-pod-0000,12000,16384,1,1000,,LS,Running,0,500,10\n"
    "openb-pod-0001,6000,12288,1,460,,BE,Succeeded,100,400,150\n"
    "openb-pod-0002,8000,8192,0,0,,BE,Running,120,900,130\n"
    "openb-pod-0003,8000,8192,2,1000,V100M16|V100M32,LS,Failed,200,260,200\n"
    "openb-pod-0004,8000,8192,1,1000,,LS,Pending,300,700,\n"
    "openb-pod-0005,8000,8192,8,1000,,Burstable,Running,400,1000,450\n"
    "openb-pod-0006,8000,8192,4,1000,A100,LS,Succeeded,500,800,520\n"
)
"""0000: 1 GPU, 490 s; 0001: 460 milli-GPU rounded up to 1, 250 s; 0002: CPU only;
0003: 2 V100 GPUs, 60 s; 0004: pending (never started); 0005: 8 GPUs running at the trace end
(1,000 s: censored, 550 s); 0006: asks for A100s, which no node has (oversized)."""
OPENB_NODES = (
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "openb-node-0000,64000,262144,2,P100\n"
    "openb-node-0001,96000,786432,8,V100M32\n"
    "openb-node-0002,96000,393216,8,G2\n"
    "openb-node-0003,32000,262144,0,\n"
)


def openb_files(
    tmp_path: Path, pods: str | bytes | None = None, nodes: str | bytes | None = None
) -> tuple[Path, Path]:
    return (
        write(tmp_path / "openb_pod_list.csv", OPENB_PODS if pods is None else pods),
        write(tmp_path / "openb_node_list.csv", OPENB_NODES if nodes is None else nodes),
    )


ACME_HEADER = (
    "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,"
    "duration,queue,gpu_time"
)
ACME_ROWS = [
    "5778432,u5907,1,8,128,Other,FAILED,2023-03-01 00:18:22+08:00,2023-03-01 00:18:54+08:00,"
    "2023-03-01 00:20:51+08:00,117,32,936.0",
    "5778469,u5907,1,8,128,Other,COMPLETED,2023-03-01 00:23:58+08:00,2023-03-01 00:24:11+08:00,"
    "2023-03-01 01:09:04+08:00,2693,13,21544.0",
    "5778500,u0001,1,0,16,Other,COMPLETED,2023-03-01 00:30:00+08:00,2023-03-01 00:30:00+08:00,"
    "2023-03-01 00:31:00+08:00,60,0,0.0",
    "5778501,u0002,128,1024,16384,Pretrain,NODE_FAIL,2023-03-01 01:00:00+08:00,"
    "2023-03-01 01:10:00+08:00,2023-03-02 01:10:00+08:00,86400,600,88473600.0",
    "5778502,u0003,1,1,16,Eval,CANCELLED,2023-03-01 01:05:00+08:00,,,,,",
    "5778503,u0003,1,2,16,SFT,TIMEOUT,2023-03-01 02:00:00+08:00,2023-03-01 02:00:05+08:00,"
    "2023-03-01 02:00:05+08:00,0,5,0.0",
    "5778504,u0004,1,4,32,Probe,COMPLETED,2023-03-01 03:00:00+08:00,2023-03-01 03:00:01+08:00,"
    "2023-03-01 03:10:01+08:00,600,1,2400.0",
    "5778505,u0004,1,1,16,Debug,PREEMPTED,2023-03-01 03:30:00+08:00,2023-03-01 03:30:00+08:00,"
    "2023-03-01 03:30:40+08:00,40,0,40.0",
]
"""Eight Seren jobs (the first two are the README's example rows): 5778432, 5778469 and
5778501 (1,024 GPUs) kept, 5778500 CPU-only, 5778502 never started (cancelled while
waiting), 5778503 ran 0 s, 5778504 kept with a type that is not Acme's (``Probe``),
5778505 kept with a state that is not Slurm's (``PREEMPTED``)."""

ACME_KALOS = (
    "job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,"
    "submit_time,start_time,end_time,fail_time,stop_time,duration,queue,gpu_time\n"
    "dlctk696s0jbvitv,uf794,8,64,960,1000,100.0,Other,FAILED,2023-05-17 11:00:58+00:00,"
    "2023-05-17 11:01:08+00:00,2023-05-17 11:01:16+00:00,2023-05-17 11:01:16+00:00,,18,10.0,"
    "1152.0\n"
    "dlc1t2ypl09b8qtp,uf794,8,64,960,1000,100.0,Other,CANCELLED,2023-05-17 11:28:42+00:00,"
    "2023-05-17 11:28:54+00:00,2023-05-17 11:30:04+00:00,,2023-05-17 11:30:04+00:00,82,12.0,"
    "5248.0\n"
)
"""The two example rows of ``trace_kalos.csv`` in the AcmeTrace README."""


def acme_file(
    tmp_path: Path, text: str | bytes | None = None, name: str = "trace_seren.csv"
) -> Path:
    """An Acme job trace (``trace_seren.csv``) with the sample rows, or the given text."""
    if text is None:
        text = ACME_HEADER + "\n" + "\n".join(ACME_ROWS) + "\n"
    return write(tmp_path / "acme" / name, text)
