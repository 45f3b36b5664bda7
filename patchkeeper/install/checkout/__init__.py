"""The upstream checkout that runs (`Install`), its version (the one version-source
chain, and what it runs to read one), trees and commits made from it without touching
its index, HEAD or work tree, and its remote-tracking refs made current.

Imports plumbing/, processes/, records/, system/."""
