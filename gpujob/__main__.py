from gpujob.cli.main import cli

cli()
