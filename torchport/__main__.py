from torchport.cli import main

main()
