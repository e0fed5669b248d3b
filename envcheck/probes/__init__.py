"""One module per source of facts; each returns data plus Skipped records and never raises.

Kept empty so that importing one probe (the doctor starts the interpreter probe before anything else) does not
import them all.
"""
