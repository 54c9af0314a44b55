-- Replaced whole by the shared ledger's list at each pull: the runs that wrote it are all there.
DELETE FROM classification_failures
