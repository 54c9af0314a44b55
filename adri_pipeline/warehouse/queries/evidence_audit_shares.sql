-- Literal / approximate / absent evidence per (model, codebook, variable), as ADR 0011 counts it: shares
-- (0-1, three decimals) among the answers that quote (waived answers, which need no quote, are counted apart).
SELECT model, codebook_hash, variable, count(*) AS answers,
       round(count(*) FILTER (WHERE audit_status = 'literal')
             / nullif(count(*) FILTER (WHERE audit_status <> 'waived'), 0), 3) AS literal_share,
       round(count(*) FILTER (WHERE audit_status = 'approximate')
             / nullif(count(*) FILTER (WHERE audit_status <> 'waived'), 0), 3) AS approximate_share,
       round(count(*) FILTER (WHERE audit_status = 'absent')
             / nullif(count(*) FILTER (WHERE audit_status <> 'waived'), 0), 3) AS absent_share,
       count(*) FILTER (WHERE audit_status = 'waived') AS waived
FROM classification_values WHERE codebook_hash = $codebook_hash GROUP BY ALL ORDER BY ALL
