INSERT INTO classification_runs ({columns}) VALUES ({placeholders})
ON CONFLICT (run_id) DO UPDATE SET {updates}
