{
  "targets": [
    {
      "target_name": "nbc_native",
      "sources": ["nbc_native.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
