"""An embedded, Hadoop-KMS-compatible key server (the REST subset ORC and Hadoop clients use)."""
