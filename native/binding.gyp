{
  "variables": {
    "ucx%": "<!(node -p \"require('fs').existsSync('/usr/include/ucp/api/ucp.h') && process.env.NBC_NO_UCX !== '1' ? 1 : 0\")"
  },
  "targets": [
    {
      "target_name": "nbc_native",
      "sources": ["nbc_native.c", "nbc_ucx.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "conditions": [
        ["ucx==1", { "defines": ["NBC_HAVE_UCX"], "libraries": ["-lucp", "-lucs"] }]
      ]
    }
  ]
}
