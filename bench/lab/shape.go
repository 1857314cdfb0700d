package lab

import (
	"github.com/pppfwd/pppfwd/dataplane/router"
	"github.com/pppfwd/pppfwd/shaper"
)

func parseShape(cfg *router.Config, spec string) error {
	sp, err := shaper.ParseSpec(spec)
	if err != nil {
		return err
	}
	cfg.Down = sp
	return nil
}
