"""Plans in pull/merge request review: the one sticky comment (`gpujob pr-comment`) and the approvals
a PR description gives. comment.py is pure text; hosts.py talks to GitHub and GitLab."""
