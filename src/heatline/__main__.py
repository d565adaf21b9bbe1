from heatline.cli import main

raise SystemExit(main())
