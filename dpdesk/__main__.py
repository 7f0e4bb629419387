from dpdesk.cli import main

raise SystemExit(main())
