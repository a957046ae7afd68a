DROP TABLE sdk_tombstones;
