from dynalocal.cli.main import main

main()
