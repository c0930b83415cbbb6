import { ATTACH_MICROSERVICE, linkMicroservices } from './microservice-link.js';

/** Stands in for NestMicroservice: registerListeners() hands its server the handlers. */
class FakeMicroservice {
  registered = 0;
  constructor(readonly serverInstance: object) {}
  registerListeners(tag: string) {
    this.registered++;
    return `registered ${tag}`;
  }
}

describe('linkMicroservices', () => {
  it('tells a strategy that accepts it which microservice registered its handlers, once per call, after Nest’s own work', () => {
    linkMicroservices(FakeMicroservice.prototype);
    const told: object[] = [];
    const server = { [ATTACH_MICROSERVICE]: (microservice: object) => told.push(microservice) };
    const microservice = new FakeMicroservice(server);
    expect(microservice.registerListeners('a')).toBe('registered a');
    expect(microservice.registered).toBe(1);
    expect(told).toEqual([microservice]);
  });

  it('wraps once however often it is called, and leaves other strategies alone', () => {
    expect(linkMicroservices(FakeMicroservice.prototype)).toBe(true);
    const wrapped = FakeMicroservice.prototype.registerListeners;
    expect(linkMicroservices(FakeMicroservice.prototype)).toBe(true);
    expect(FakeMicroservice.prototype.registerListeners).toBe(wrapped);
    const other = new FakeMicroservice({ listen() {} });
    expect(other.registerListeners('b')).toBe('registered b');
  });

  it('finds the strategy under the name older Nest versions give it (`server`)', () => {
    class OlderMicroservice {
      constructor(readonly server: object) {}
      registerListeners() {}
    }
    linkMicroservices(OlderMicroservice.prototype);
    const told: object[] = [];
    const microservice = new OlderMicroservice({ [ATTACH_MICROSERVICE]: (m: object) => told.push(m) });
    microservice.registerListeners();
    expect(told).toEqual([microservice]);
  });

  it('reports that there is nothing to wrap on a Nest version without registerListeners()', () => {
    expect(linkMicroservices({})).toBe(false);
  });
});
