DROP TABLE flag_segment_refs;
DROP TABLE segment_tags;
DROP TABLE segments;
