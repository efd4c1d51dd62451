"""gpujob's SSH layer (asyncssh). Import the submodules directly; this package imports nothing heavy.

keys.ensure_project_key(state_dir) -> (private_key_path, public_key_line)
session.connect(endpoint, *, key_path, known_hosts, resource_id, timeout=30, expect_new_host=False)
    async context manager -> session.Remote (.run, .put_bytes, .get_bytes, .stream_in, .stream_out)
sync.sync_tree(remote, src, dest, exclude, progress=None) -> SyncStats
pull.pull_checkpoints(remote, remote_dir, local_dir, *, verify, progress=None, lanes=(), stripes=None)
    -> PullOutcome (iterates PulledCheckpoint); spans: the .part and its span record
launcher.launch_run(remote, spec, *, secrets) -> bool ; launcher.run_status(remote, spec) -> RunStatus
quote: q, join, exports, with_env, remote_path, session_name
testing.local_sshd(tmp_path) -> (SSHEndpoint, key_path)   (a real OpenSSH sshd on 127.0.0.1)
"""
