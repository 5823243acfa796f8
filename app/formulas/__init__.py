"""Pure formulas, no I/O: lifecycle and belief maths, salience, resolution scoring, merge
patch, the session gap rule, valid-time placement and the point in time of a read."""
