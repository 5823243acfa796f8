"""`engram serve` started as processes: several workers, two replicas on one database."""
