SELECT * FROM mirror_evaluations ORDER BY log, decision_point
