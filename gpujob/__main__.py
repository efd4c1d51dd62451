from gpujob.cli.main import main

main()
