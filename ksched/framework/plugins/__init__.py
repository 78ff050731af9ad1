"""In-tree plugins, one package each; packages never import each other."""
