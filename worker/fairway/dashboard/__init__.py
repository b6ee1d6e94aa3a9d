"""`fairway dashboard`: a web page over a Fairway Redis, in the spirit of Horizon's (see app.py)."""
