"""One module per asset, named after the table it produces."""
