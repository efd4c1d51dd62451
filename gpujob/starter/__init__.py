"""The files `gpujob init` writes: a job.yaml per platform, and a resumable training loop with its
load check (train.py, verify_ckpt.py) that keep the job contract described in docs/job-file.md."""
