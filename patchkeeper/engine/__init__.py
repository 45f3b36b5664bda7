"""The engine: judge a patch set against a target (classify, batch, 3-way merge), apply and
unapply it on the work tree, write patch files from the tree, check it against refs."""
