DROP TABLE account;
