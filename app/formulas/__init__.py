"""Pure formulas with no database: lifecycle maths, salience, resolution scoring, merge patch."""
