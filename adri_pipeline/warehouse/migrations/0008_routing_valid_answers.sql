-- A routing decision whose System One answer broke the spec (or never came) is kept, wrong at
-- confidence 0, with valid = false (jev/contract.check_response).
ALTER TABLE routing_predictions ADD COLUMN IF NOT EXISTS valid BOOLEAN DEFAULT true;
