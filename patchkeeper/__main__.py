from patchkeeper.cli import main

main()
