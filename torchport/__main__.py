from torchport.command import main

main()
