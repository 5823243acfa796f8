"""Every SQL statement, one module per table family; search/ holds the read path's."""
