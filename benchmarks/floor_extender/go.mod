module floor_extender

go 1.19
