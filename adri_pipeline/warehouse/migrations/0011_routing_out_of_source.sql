-- Out-of-source tests (routing/out_of_source.py): each prediction and metric names the test set it
-- was measured on (the run's own test split is 'in source'); a prediction keeps how familiar its
-- message was to the fit data (calibration.Familiarity), the signal the drift monitor watches.
ALTER TABLE routing_predictions ADD COLUMN IF NOT EXISTS familiarity DOUBLE;
ALTER TABLE routing_predictions ADD COLUMN IF NOT EXISTS test_set VARCHAR DEFAULT 'in source';
ALTER TABLE routing_metrics ADD COLUMN IF NOT EXISTS test_set VARCHAR DEFAULT 'in source';
