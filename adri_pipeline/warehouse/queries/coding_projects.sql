-- The projects of one coding round, in the order of its passes.
SELECT * FROM coding_projects WHERE round = $round
ORDER BY CASE pass WHEN 'blind' THEN 0 WHEN 'review' THEN 1 ELSE 2 END, coder
