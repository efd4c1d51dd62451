"""Terraform's state habits for gpujob: `state list`, `state rm`, `import`.

gpujob keeps no list of resources: a resource is a job's by its name (gpujob.naming). So forgetting and
adopting are records beside that rule, in the project's store (gpujob.project.ownership), which gpujob.naming reads
once the project is known: listing.py shows jobs with their resources, importing.py adopts one.
"""
