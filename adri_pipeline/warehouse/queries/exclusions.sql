-- Documents a (model, codebook signature) does not count in findings: left out at load for having no
-- abstract, and with no answer that follows the codebook.
SELECT (SELECT coalesce(sum(excluded_no_abstract), 0) FROM coverage)::BIGINT AS no_abstract,
       (SELECT count(*) FROM classification_failures WHERE model = $model AND signature = $signature)::BIGINT AS failed
