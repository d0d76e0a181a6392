"""Provider adapters. Importing this package imports no SDK; each subpackage imports its own."""
