from eagle3lint.cli import main

if __name__ == "__main__":
    main()
