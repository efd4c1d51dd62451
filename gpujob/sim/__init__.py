"""`gpujob sim`: a local simulator of the RunPod and Paperspace HTTP APIs with real SSH pods.

Layout: clock (simulated time), state (persistent JSON model), prices + meters (billing from the
profiles), podproc (sshd in mount+pid namespaces), faults, engine (lifecycles), http + the API
handlers (runpod_rest, runpod_graphql with its schema in gql_schema, runpod_clusters, paperspace_api,
control_api), testing (in-process context manager), daemon (`python -m gpujob.sim`)."""
