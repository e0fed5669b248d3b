"""`envcheck doctor`: probe (or read a snapshot), judge it against the matrix, report."""
